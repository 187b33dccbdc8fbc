"""Importing this registers every package's checks of params.yaml (`rem.config`'s loaders do before they read a
config, so a bad name stops a run in one line); `settings_reference` renders the options every registry entry declares
(docs/settings.md). `rem.config` imports this module only when a config is loaded, never when it is imported: it
is the leaf every package imports."""

from rem.analysis import checks as eval_checks  # noqa: F401  (importing registers; each package one section's)
from rem.config.options import REQUIRED, declared_options
from rem.data import checks as data_checks  # noqa: F401
from rem.data.registry import FAMILIES, named_forms
from rem.models import checks as model_checks  # noqa: F401
from rem.models.registry import MODELS, family_options, list_models
from rem.pruning import checks as prune_checks  # noqa: F401
from rem.pruning.methods.registry import METHODS
from rem.report import checks as report_checks  # noqa: F401
from rem.results import checks as sweep_checks  # noqa: F401  (its grid check builds every point: run last)
from rem.routing import ROUTINGS
from rem.training import checks as train_checks  # noqa: F401


def _default(value) -> str:
    """A default as params.yaml writes it."""
    if value is REQUIRED:
        return "required"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(map(_default, value)) + "]"
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _ours(module: str) -> bool:
    return module.startswith("rem.")  # a plugin's entries (or a test's) document themselves


def _options(declared: dict) -> str:
    return ", ".join(f"`{key}` ({_default(value)})" for key, value in declared.items()) or "none"


def _set_by_models(routing) -> str:
    """Each of the routing's options a model family declares too (it sets that one), with those families."""
    families = {key: [f"`{name}`" for name in list_models() if key in family_options(name)]
                for key in declared_options(routing.options)}
    return "; ".join(f"`{key}`: {', '.join(names)}" for key, names in families.items() if names) or "none"


def settings_reference() -> str:
    """docs/settings.md's Markdown tables of the options each model family, routing, dataset family and pruning
    method declares, with defaults (`python -m rem.checks` prints it)."""
    lines = ["| `model.name` | `model.options` (default) |", "|---|---|"]
    for name in list_models():
        if not _ours(MODELS.get(name).builder.__module__):
            continue
        lines.append(f"| `{name}` | {_options(family_options(name))} |")
    lines += ["", "| `model.routing` | `model.routing_options` (default) | set in `model.options` instead by |",
              "|---|---|---|"]
    for name, routing in ROUTINGS.items():
        if _ours(routing.route.__module__):
            lines.append(f"| `{name}` | {_options(declared_options(routing.options))} | {_set_by_models(routing)} |")
    lines += ["", "| `data.dataset` | the `data` keys it reads beyond every dataset's | `data.options` (default) |",
              "|---|---|---|"]
    for name, family in FAMILIES.items():
        if not _ours(type(family).__module__):
            continue
        name = next((form for form in named_forms() if form.startswith(name)), name) if name.endswith(":") else name
        settings = ", ".join(f"`data.{key}`" for key in family.settings) or "none"
        lines.append(f"| `{name}` | {settings} | {_options(declared_options(family.options))} |")
    lines += ["", "| `prune.method` | `prune.options` (default) |", "|---|---|"]
    for name, method in METHODS.items():
        if _ours(method.__module__):
            lines.append(f"| `{name}` | {_options(declared_options(method.options))} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(settings_reference(), end="")
