"""The layout rules a reviewer holds the code to, checked on the source tree itself.

- Short functions keep each piece readable on one screen (a file's length is a question of cohesion, not a rule:
  no line cap on files).
- The library (`rem`) stays usable on its own, without the pipeline, Ray or MLflow (a user who only wants the models
  and REM's pruning installs neither).
- `rem/`'s top level holds the science and little else: at most ten files; the jobs live in packages.
- No import circles: the modules of `rem` and `pipeline`, with an edge for every module-level import (the
  `__init__` of each package it passes through included, `if TYPE_CHECKING:` imports left out), form no cycle.
- Packages are layers: with an edge from package A to package B when a module of A imports one of B, the packages of
  `rem` (each top-level module counts as one) and `pipeline` form no cycle either. `rem.config` is the leaf at the
  bottom (it imports no other package of `rem`); a check that needs another package is that package's. Lazy imports
  and modules named in strings count too in tests/test_package_layers.py.
- An import of `rem` or `pipeline` inside a function is there only to defer a heavy third-party import (matplotlib,
  MLflow, Ray): each one is listed below with the reason, and there are at most eight.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
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


def test_starting_a_trial_or_a_stage_does_not_import_torch_dynamo():
    """torch._dynamo costs ~2 s of every process's start (each trial worker, CLI call, pipeline stage): only a run
    that compiles (rem.capsules.compile_model) may import it."""
    script = ("import sys, rem, pipeline.ray_trials, pipeline.report, rem.training.loop\n"
              "print(sorted(m for m in sys.modules if m.startswith('torch._dynamo')))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout[-500:], done.stderr[-2000:])


def calls_exit_with(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] == "exit_with" for n in ast.walk(node))


def ends_with_exit_with(path: Path) -> bool:
    """Whether the module's `if __name__ == "__main__":` block ends its process through rem.cli.exit_with, itself
    or in a function of the module it calls (pipeline.cli's `run`, the `rem` script's entry point)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            last = node.body[-1]
            called = {ast.unparse(n.func) for n in ast.walk(last) if isinstance(n, ast.Call)} & set(functions)
            return calls_exit_with(last) or any(calls_exit_with(functions[name]) for name in called)
    return True  # not a program


def test_every_command_ends_its_process_through_exit_with():
    """A command's last act is rem.cli.exit_with: without it Python's exit collects every object torch, MLflow
    and Ray loaded, 1.3-1.5 s of CPU at the end of each stage, sweep and `rem` call."""
    programs = [p for p in sources("pipeline") + [ROOT / "rem" / "cli.py"] if "__main__" in p.read_text()]
    offenders = [str(p.relative_to(ROOT)) for p in programs if not ends_with_exit_with(p)]
    assert len(programs) >= 10 and not offenders, offenders


MAX_TOP_LEVEL_FILES = 10


def test_the_library_top_level_holds_at_most_ten_files():
    top = sorted(p.name for p in (ROOT / "rem").glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_FILES, f"rem/ holds {len(top)} files (at most {MAX_TOP_LEVEL_FILES}): {top}"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sources("rem", "pipeline")}


def project_imports(tree: ast.AST) -> Iterator[tuple[ast.AST, list[str]]]:
    """Each import statement of the project's own modules, with the modules it names (`from pkg import sub`
    names the submodule)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                     for a in node.names]
        else:
            continue
        if names := [name for name in names if name in MODULES]:
            yield node, names


def nodes_under(nodes) -> set[int]:
    return {id(inner) for node in nodes for inner in ast.walk(node)}


def function_and_typing_nodes(tree: ast.AST) -> tuple[set[int], set[int]]:
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    typing_blocks = [b for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
                     for b in n.body]
    return nodes_under(functions), nodes_under(typing_blocks)


def with_packages(name: str, importer: str) -> set[str]:
    """`name` and the packages Python runs on the way to it, but not the importer's own packages."""
    parts = name.split(".")
    own = {".".join(importer.split(".")[:i]) for i in range(1, importer.count(".") + 2)}
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} - own - {importer}


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    """Module -> the project modules it imports at module level; and every in-function import as 'file:line name'."""
    graph, deferred = {}, []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        in_functions, typing_only = function_and_typing_nodes(tree)
        graph[name] = set()
        for node, targets in project_imports(tree):
            if id(node) in in_functions:
                deferred += [f"{path.relative_to(ROOT)}:{node.lineno} {target}" for target in targets]
            elif id(node) not in typing_only:
                graph[name] |= {m for target in targets for m in with_packages(target, name) if m in MODULES}
    return graph, deferred


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_module_import_circles():
    found = cycles(import_graph()[0])
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def package_of(module: str) -> str:
    """`rem.pruning.methods.rem` -> `rem.pruning`; a top-level module (`rem.routing_health`) is its own; `pipeline`."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "rem" and len(parts) > 1 else parts[0]


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package -> the packages its modules import (the root `rem`, whose `__init__` imports nothing at module level,
    is left out)."""
    packages: dict[str, set[str]] = {}
    for module, imported in graph.items():
        source = package_of(module)
        packages.setdefault(source, set()).update(
            target for target in map(package_of, imported) if target not in (source, "rem"))
    return packages


def test_no_package_import_circles():
    found = cycles(package_graph(import_graph()[0]))
    assert not found, "packages importing each other (a layer must only import those below it):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_the_config_is_the_leaf():
    imported = package_graph(import_graph()[0])["rem.config"]
    assert not imported, f"rem.config imports {sorted(imported)}: a check that needs them belongs to their package"


def test_the_package_graph_sees_a_circle_between_packages():
    modules = {"rem.a.x": {"rem.b.y"}, "rem.b.y": set(), "rem.b.z": {"rem.a.w"}, "rem.a.w": set()}
    assert cycles(package_graph(modules)) == [["rem.a", "rem.b"]]


def test_the_circle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# Each import of rem/pipeline inside a function, and the heavy third-party import it defers.
DEFERRED_IMPORTS = {
    "rem/__init__.py rem.tracking.model_store": "torch and MLflow only when `rem.load_model` is called",
    "rem/report/analysis_files.py rem.report.figures.curve": "matplotlib only when a curve is drawn",
    "rem/report/analysis_files.py rem.report.figures.robustness": "matplotlib only when a curve is drawn",
    "rem/report/stage.py rem.report.figures.build": "matplotlib only when figures are asked for",
    "pipeline/sweep.py pipeline.trial": "Ray Tune and MLflow, after the environment Ray reads at import is set",
    "rem/config/root.py rem.config.stored": "old keys only where stored things are read or a key is unknown",
    "rem/results/table.py rem.config.stored": "old keys only when a table is read (labelling arms imports the module)",
    "rem/report/checks.py rem.report.sequential": "scipy only where a profile states a sequential design "
                                                  "(tests/test_start_imports.py)",
}
MAX_DEFERRED_IMPORTS = 10


def test_imports_inside_functions_only_defer_heavy_imports():
    deferred = [line.split(":")[0] + " " + line.split(" ")[1] for line in import_graph()[1]]
    unlisted = sorted(set(deferred) - set(DEFERRED_IMPORTS))
    assert not unlisted, "imports of rem/pipeline inside functions (move them to the top):\n" + "\n".join(unlisted)
    assert len(deferred) <= MAX_DEFERRED_IMPORTS, deferred
