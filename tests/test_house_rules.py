"""The layout rules a reviewer holds the code to, checked on the source tree itself.

Short functions keep each piece readable on one screen (a file's length is a question of cohesion, not a rule:
no line cap on files); the library (`rem`) must stay usable on its
own, without the pipeline, Ray or MLflow (a user who only wants the models and REM's pruning installs neither).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 60


def sources(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (ROOT / package).rglob("*.py"))


def long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_no_function_is_longer_than_sixty_lines():
    offenders = [line for path in sources("rem", "pipeline") for line in long_functions(path)]
    assert not offenders, "functions over 60 lines:\n" + "\n".join(offenders)


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, by statement or by name (`__import__`/`import_module` with a literal)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("pipeline."):
            names.add(node.value)
    return names


def test_the_library_never_reaches_into_the_pipeline():
    offenders = [f"{p.relative_to(ROOT)}: {name}" for p in sources("rem") for name in sorted(imported_modules(p))
                 if name == "pipeline" or name.startswith("pipeline.")]
    assert not offenders, "rem/ must not import pipeline/:\n" + "\n".join(offenders)


def test_every_library_module_imports_without_ray_or_mlflow():
    # A None entry in sys.modules makes `import ray` raise ImportError, as on a machine without Ray.
    script = (
        "import sys, pkgutil, importlib\n"
        "for name in ('ray', 'mlflow', 'pipeline'): sys.modules[name] = None\n"
        "import rem\n"
        "for info in pkgutil.walk_packages(rem.__path__, 'rem.'):\n"
        "    importlib.import_module(info.name)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr.strip().splitlines()[-1:]
