"""Runs submitted by people: the submission document and the checks it must pass.

Pure: plain values in, plain values out. The store reads what the checks need (the workload's
cases and bounds, whether a digest is known) and the web layer answers their refusals.
"""
