"""Entry point of the funcgrad GradBench tool: ``python bench/gradbench/tool.py [--multithreaded]``
speaks GradBench's protocol on stdin/stdout (see ``funcgrad_tool/server.py``)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from funcgrad_tool.server import main  # noqa: E402

if __name__ == "__main__":
    main()
