"""Loaded by Python at start-up when this folder is on PYTHONPATH: the compile census."""
import os

if os.environ.get("COMPILE_LOG"):
    from benchmarks.compile_census import install

    install(os.environ["COMPILE_LOG"])
