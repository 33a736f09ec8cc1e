"""Issue 45, "Done when": the README's Python example runs as printed, in an empty folder
(what a new user pastes works)."""

import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_python_example_runs(tmp_path):
    section = README.read_text(encoding="utf-8").split("## Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "turns one way" in run.stdout
