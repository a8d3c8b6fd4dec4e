"""The built wheel, installed where the repository is out of sight, serves the whole site.

The wheel is built from a copy of the files git knows (so nothing left in the repository's build/
folder can slip in), installed with no dependencies into a fresh virtual environment that borrows
this environment's installed packages through a .pth file (that reads no .pth file of theirs, so the
editable install of kernelindex is not visible there), and started from an empty folder.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import httpx
import pytest
from bs4 import BeautifulSoup
from sqlalchemy import func, select

from kernelindex import __version__
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.rerun_tables import RerunBundle
from kernelindex.db.tables import Workload
from tests.servers import free_port

REPO = Path(__file__).resolve().parents[1]
# Folders at the top of the repository that ship inside the package, as kernelindex/<folder>/.
SHIPPED_FOLDERS = ("templates/", "static/", "migrations/", "fixtures/sol-execbench/", "fixtures/reruns/")
PAGES = (
    "/",
    "/workloads/l1-040-conv2d-residual-block",
    "/runs/sol-submission-16893",
    "/gpus/h200",
    "/api/v1/workloads",
)


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def git_files() -> list[str]:
    """The repository's files as git sees them: tracked, and untracked but not ignored."""
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO)
    return sorted({name for name in listed.split("\0") if name and (REPO / name).is_file()})


def clean_env() -> dict[str, str]:
    """This environment minus anything that could point the installed copy back at the repository."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("KERNELINDEX_")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in git_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", dist, source, cwd=dist)
    (built,) = dist.glob("kernelindex-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("venv")
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=venv)
    python = venv / "bin" / "python"
    site_packages = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=venv).strip())
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site_packages / "borrowed-dependencies.pth").write_text("".join(f"{path}\n" for path in ours))
    install = ("install", "--quiet", "--no-deps", "--no-index", wheel)
    run(sys.executable, "-m", "pip", "--python", python, *install, cwd=venv)
    return venv


def test_wheel_holds_every_module_and_bundled_file(wheel):
    files = git_files()
    expected = {name for name in files if name.startswith("kernelindex/") and name.endswith(".py")}
    expected |= {f"kernelindex/{name}" for name in files if name.startswith(SHIPPED_FOLDERS)}
    expected |= {f"kernelindex/{folder}/__init__.py" for folder in ("templates", "static", "migrations", "fixtures")}
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert expected - names == set()
    assert "kernelindex/fixtures/sol-execbench/MANIFEST.sha256" in names
    assert "kernelindex/fixtures/reruns/README.md" in names


def test_installed_wheel_serves_the_bundled_data_from_an_empty_folder(venv, tmp_path):
    """The README's first command from the installed wheel: a fresh store, configured by the
    environment, comes up migrated and holding every bundled source and the reruns."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = clean_env()
    probe = "import kernelindex, kernelindex.paths as p; print(kernelindex.__file__); print(p.TEMPLATES, p.MIGRATIONS)"
    imported = run(venv / "bin" / "python", "-c", probe, cwd=empty, env=env)
    assert str(venv) in imported and str(REPO) not in imported, imported
    assert run(venv / "bin" / "kernelindex", "--version", cwd=empty, env=env).strip().endswith(__version__)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    store_url = f"sqlite:///{tmp_path}/fresh.db"
    process = subprocess.Popen(
        [venv / "bin" / "kernelindex", "serve", "--port", str(port)],
        cwd=empty,
        env={**env, "KERNELINDEX_DATABASE_URL": store_url},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # Generous: the first start loads every source, and a busy test machine slows it down
        # (bench/first_start.py measures how long it takes).
        deadline = time.monotonic() + 300
        while True:
            try:
                home = httpx.get(f"{base}/", timeout=5)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()  # one still loading would keep communicate() waiting for ever
                    raise AssertionError(process.communicate()[0]) from None
                time.sleep(0.2)
        responses = {path: httpx.get(f"{base}{path}", timeout=10) for path in PAGES}
        stylesheet_href = BeautifulSoup(home.text, "html.parser").select_one('link[rel="stylesheet"]')["href"]
        stylesheet = httpx.get(httpx.URL(f"{base}/").join(str(stylesheet_href)), timeout=10)
        index = httpx.get(f"{base}/index.json", timeout=10).json()
        h200 = httpx.get(f"{base}/gpus/h200.json", timeout=10).json()
        gpus = httpx.get(f"{base}/gpus.json", timeout=10).json()["gpus"]
        relu = httpx.get(f"{base}/search.json", params={"q": "relu"}, timeout=10)
        engine = make_engine(store_url)
        with make_sessionmaker(engine)() as session:
            level_1 = session.scalars(select(Workload.name).where(Workload.collection == "KernelBench level 1")).all()
            stored_workloads = session.scalar(select(func.count()).select_from(Workload))
            stored_bundles = session.scalar(select(func.count()).select_from(RerunBundle))
        engine.dispose()
        widest = max(
            len((httpx.get(f"{base}/workloads/{name}.json", timeout=10).json()["crossGpu"] or {"gpus": []})["gpus"])
            for name in level_1[:20]
        )
    finally:
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=20)[0]

    assert {path: r.status_code for path, r in responses.items()} == dict.fromkeys(PAGES, 200)
    listing = responses["/api/v1/workloads"].json()
    assert listing["items"] and listing["nextCursor"] is not None  # 938 workloads: more than one page
    # SOL-ExecBench, KernelBench, Liger-Kernel, aiter's and AIConfigurator's slices
    assert index["workloadCount"] == stored_workloads == 235 + 521 + 182 + 325 + 59
    assert stored_bundles == len(list((REPO / "fixtures" / "reruns" / "bundles").glob("*.json")))
    # The two SOL-ExecBench workloads and 222 KernelBench problems the reruns measured, and 50 of the
    # AIConfigurator slice's 59 (MoE, GEMM, all-reduce).
    assert h200["gpu"]["measuredWorkloads"] == 2 + 222 + 50, h200
    # What a newcomer sees: every source's GPUs, and a problem's figures across them.
    assert len([gpu for gpu in gpus if gpu["runs"]]) >= 12
    assert relu.status_code == 200
    assert widest >= 8
    assert stylesheet.status_code == 200
    assert stylesheet.headers["content-type"].startswith("text/css")
    assert len(stylesheet.content) > 4000
    assert ":root {" in stylesheet.text and "}" in stylesheet.text
    assert "loading the bundled snapshot of every source" in output
    assert "Loading the bundled controlled reruns" in output and "refused" not in output
    assert "succeeded" in output
    # The server says where the rerun bundles it imported came from: the installed copy.
    assert re.search(rf"imported [1-9][0-9]* rerun bundle\(s\) from {re.escape(str(venv))}", output), output
    assert str(REPO) not in output
    # The store is the configured file; no default ./kernelindex.db was made in the working directory.
    assert (tmp_path / "fresh.db").is_file() and not (empty / "kernelindex.db").exists()
