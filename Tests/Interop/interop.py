#!/usr/bin/env python3
"""The interop suite's entry point (run.sh runs it with the venv's python); the suite itself is the package suite/:
its docstring, `python3 interop.py --help`, says how it is laid out."""
import os, signal, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite.main import main, interrupted   # noqa: E402
from suite.engine import Proc              # noqa: E402

if __name__ == '__main__':
    signal.signal(signal.SIGTERM, interrupted)
    try:
        status = main(sys.argv[1:])
    except KeyboardInterrupt:
        status = 130
    finally:
        Proc.stop_all()
    sys.exit(status)
