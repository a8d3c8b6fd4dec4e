"""Databases in trouble on 127.0.0.1, for tests: a server that accepts connections and never
answers, and a TCP proxy to a real server that can be paused (it then holds what either side
sends, as a server that stopped answering would) and resumed."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def _listening() -> socket.socket:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    listener.settimeout(0.1)
    return listener


def _accepting(listener: socket.socket, stop: threading.Event, handle: object) -> None:
    assert callable(handle)
    while not stop.is_set():
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        handle(connection)


@contextmanager
def silent_server() -> Iterator[int]:
    """A server that accepts every connection, reads nothing and never answers; yields its port."""
    listener = _listening()
    stop = threading.Event()
    held: list[socket.socket] = []
    thread = threading.Thread(target=_accepting, args=(listener, stop, held.append), daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in [*held, listener]:
            connection.close()


class PausableProxy:
    """Forwards each connection to ``target`` while running; paused, it accepts connections and
    reads what either side sends but passes nothing on until it is resumed."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.listener = _listening()
        self.port = int(self.listener.getsockname()[1])
        self.running = threading.Event()
        self.running.set()
        self.stop = threading.Event()
        self.sockets: list[socket.socket] = []
        self.thread = threading.Thread(target=_accepting, args=(self.listener, self.stop, self._start), daemon=True)

    def pause(self) -> None:
        self.running.clear()

    def resume(self) -> None:
        self.running.set()

    def _start(self, client: socket.socket) -> None:
        self.sockets.append(client)
        threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        self.running.wait()
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            client.close()
            return
        self.sockets.append(upstream)
        for source, target in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                self.running.wait()
                if self.stop.is_set():
                    break
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> PausableProxy:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.running.set()
        self.thread.join(timeout=5)
        for connection in [*self.sockets, self.listener]:
            with contextlib.suppress(OSError):
                connection.close()
