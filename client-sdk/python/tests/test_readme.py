"""The Python blocks of client-sdk/python/README.md and examples/python-backend/README.md at
least compile, and every name they take from fencelock exists."""

from __future__ import annotations

import os
import re
import unittest

import fencelock
from fencelock import errors

HERE = os.path.dirname(os.path.abspath(__file__))
READMES = [os.path.join(HERE, "..", "README.md")]


class ReadmeBlocks(unittest.TestCase):
    def test_python_blocks_compile_and_name_real_things(self) -> None:
        try:
            from fencelock import postgres
        except ImportError:
            postgres = None  # type: ignore[assignment]
        for path in READMES:
            with open(path) as f:
                text = f.read()
            blocks = re.findall(r"```python\n(.*?)```", text, re.S)
            self.assertTrue(blocks, path)
            for block in blocks:
                compile(block, path, "exec")
                for attribute in re.findall(r"\bfencelock\.([A-Za-z_]+)", block):
                    self.assertTrue(hasattr(fencelock, attribute) or hasattr(errors, attribute)
                                    or attribute == "postgres", attribute)
                if postgres is not None:
                    for attribute in re.findall(r"\bpostgres\.([A-Za-z_]+)", block):
                        self.assertTrue(hasattr(postgres, attribute), attribute)


if __name__ == "__main__":
    unittest.main()
