"""The library's import layers: a module imports only modules of its own layer or of the layers
below it, and no import (module-level or inside a function) closes a circle. A new module gets
a row in LAYERS; a helper that two layers share moves down to the lower one."""
import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "workflow" / "lmad"

#: Lowest first. A name covers its submodules (``lmad.backends``: every backend); the longest
#: name that matches a module is its layer.
LAYERS = [
    # tables, paths, files, answers, numbers, figures, processes: no model, no method
    ("core", ["lmad", "lmad.schemas", "lmad.layout", "lmad.atomic", "lmad.data", "lmad.answers",
              "lmad.model_json", "lmad.call_accounting", "lmad.number_format", "lmad.stats", "lmad.plotting", "lmad.headline",
              "lmad.judge_battery", "lmad.tones", "lmad.job", "lmad.job_resources", "lmad.liveness", "lmad.runlock",
              "lmad.run_end", "lmad.backend_registry"]),
    # the model seam: every backend, the call cache, served vLLM, batching by backend
    ("backends", ["lmad.backends"]),
    # what a model is asked and how its reply is read, shared by every method
    ("calls", ["lmad.prompts", "lmad.solver", "lmad.societies", "lmad.committees", "lmad.disagreement_labels"]),
    ("protocols", ["lmad.protocols"]),
    ("registry", ["lmad.registry"]),
    # what the studies compute from saved tables and model calls
    # (a study's library: lmad.studies.<name>.*, by STUDY_MODULES)
    ("studies", ["lmad.paper"]),
    # the rules' stage functions: read tables, call the layers below, write tables
    ("stages", ["lmad.stages"]),
    # Snakemake's side: the rule bridge and command, the warm worker and its client, the planning, the
    # config checks and the forecast that reads the plan
    ("glue", ["lmad.smk", "lmad.stage_command", "lmad.worker", "lmad.worker_client", "lmad.config_schema",
              "lmad.config_checks", "lmad.plan", "lmad.slurm_placement", "lmad.report_check", "lmad.forecast",
              "lmad.forecast_calls", "lmad.forecast_inputs", "lmad.studies"]),
]
RANK = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}
#: the layer of a module of a study's folder (lmad.studies.<name>.<module>), by its module name:
#: its planning is glue, its stage functions are stages, the rest is its library
STUDY_MODULES = {"plan": "glue", "stages": "stages"}


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = modules()


def layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[:2] == ["lmad", "studies"] and len(parts) > 2:
        kind = "stages" if parts[-1].endswith("_stages") else STUDY_MODULES.get(parts[-1] if len(parts) > 3 else "", "studies")
        return [n for n, _ in LAYERS].index(kind)
    name = module
    while name not in RANK and "." in name:
        name = name.rsplit(".", 1)[0]
    return RANK.get(name)


def known(name: str) -> str:
    """The package module ``name`` is (or is inside: an attribute of a module)."""
    while name not in MODULES:
        name = name.rsplit(".", 1)[0]
    return name


def imports(module: str) -> list[tuple[str, int]]:
    """(imported package module, line) of every import in ``module``, function-level ones included."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(known(a.name), node.lineno) for a in node.names if a.name.split(".")[0] == "lmad"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "lmad":
                continue
            for alias in node.names:  # `from . import layout` imports a module, `from .x import f` a name
                full = f"{source}.{alias.name}"
                out.append((full if full in MODULES else known(source), node.lineno))
    return sorted({(target, line) for target, line in out if target != module})


GRAPH = {m: imports(m) for m in MODULES}


def test_every_module_has_a_layer():
    missing = [m for m in MODULES if layer(m) is None]
    assert not missing, f"give these modules a layer in tests/test_layers.py LAYERS: {missing}"


def test_no_module_imports_a_higher_layer():
    names = [name for name, _ in LAYERS]
    upward = [f"{MODULES[m].relative_to(REPO)}:{line}: {m} ({names[layer(m)]}) imports {t} ({names[layer(t)]})"
              for m, targets in GRAPH.items() for t, line in targets
              if layer(m) is not None and layer(t) is not None and layer(t) > layer(m)]
    assert not upward, "imports that run back up (move the shared piece down a layer):\n" + "\n".join(upward)


def test_no_import_closes_a_circle():
    done, on_path, circles = set(), [], []

    def visit(m):
        if m in on_path:
            circles.append(" -> ".join(on_path[on_path.index(m):] + [m]))
            return
        if m in done:
            return
        on_path.append(m)
        for target, _ in GRAPH[m]:
            visit(target)
        on_path.pop()
        done.add(m)

    for m in sorted(GRAPH):
        visit(m)
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_checks_see_function_level_and_relative_imports():
    # a rule's command hands its line to the worker's client and builds the job through lmad.smk
    # inside a function; the worker builds it through lmad.smk and runs it through lmad.job
    assert {"lmad.worker_client", "lmad.smk"} <= {t for t, _ in GRAPH["lmad.stage_command"]}
    assert {"lmad.smk", "lmad.job"} <= {t for t, _ in GRAPH["lmad.worker"]}
    assert "lmad.layout" in {t for t, _ in GRAPH["lmad.paper.figures"]}  # `from .. import layout`


#: the free-form types' own helpers: only the answers package and the free-form judge's known-answer
#: battery (official EM/F1 by construction) may use them; everything else compares through a type
SPAN_ONLY = ("lmad.answers.span", "lmad.answers.yes_no", "lmad.answers.official")
SPAN_ONLY_USERS = ("lmad.answers", "lmad.judge_battery")
#: what other code may take from the shared text module: claim comparison, the test double's judge
TEXT_NAMES = {"claim_key", "normalize_hotpot"}
TEXT_USERS = {"claim_key": None, "normalize_hotpot": ("lmad.backends.scripted", "lmad.judge_battery")}


def _from_imports(module: str):
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else [])) if node.level else (node.module or "")
            yield source, [a.name for a in node.names], node.lineno


def test_answers_are_compared_only_through_their_type():
    bad = []
    for m in MODULES:
        if m == "lmad.answers" or m.startswith("lmad.answers."):
            continue
        for source, names, line in _from_imports(m):
            targets = {source, *(f"{source}.{n}" for n in names)}
            if targets & set(SPAN_ONLY) and not any(m == u or m.startswith(u + ".") for u in SPAN_ONLY_USERS):
                bad.append(f"{m}:{line} imports {sorted(targets & set(SPAN_ONLY))}")
            if source == "lmad.answers.text":
                for n in names:
                    users = TEXT_USERS.get(n, ())
                    if n not in TEXT_NAMES or (users is not None and m not in users):
                        bad.append(f"{m}:{line} takes {n} from lmad.answers.text")
    assert not bad, "compare answers through lmad.answers (a type, a Reading or a Gold):\n" + "\n".join(bad)


_TYPE_ARGS = {"answer_type", "answer_types", "reading", "reader", "kind"}


def test_no_signature_or_field_defaults_an_answer_type():
    """A missing answer type is an error, never "span": no parameter or dataclass field that takes
    a type or a reading has a default, and no code falls back to "span"."""
    found = []
    for m, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args
                defaults = dict(zip([a.arg for a in args][len(args) - len(node.args.defaults):], node.args.defaults))
                defaults |= {a.arg: d for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None}
                found += [f"{m}:{node.lineno} {node.name}({a}=...)" for a in defaults if a in _TYPE_ARGS]
            if isinstance(node, ast.ClassDef):  # a dataclass field with a default
                found += [f"{m}:{f.lineno} {node.name}.{f.target.id} = ..." for f in node.body
                          if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name) and f.value is not None
                          and f.target.id in _TYPE_ARGS]
        if m != "lmad.answers.span":
            found += [f"{m}: falls back to span" for pat in ('or "span"', "or 'span'", 'SPAN_READER', ', "span")')
                      if pat in text]
    assert not found, "defaults that stand for an answer type:\n" + "\n".join(found)


#: The most methods a class may have, its package bases' counted: a class past it holds more
#: than one concern (split it into components it holds, as lmad.plan.Plan does).
MAX_METHODS = 30


def method_counts(sources: dict[str, str]) -> dict[str, int]:
    """{module.Class: its methods, those it inherits from package classes included} of every class
    of ``sources`` ({dotted module: its text}). A base is resolved by name through the module's
    own classes and its ``from … import`` of package modules; a base outside the package adds none."""
    trees = {m: ast.parse(text) for m, text in sources.items()}
    classes = {f"{m}.{node.name}": node for m, tree in trees.items() for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef)}

    def scope(m: str) -> dict[str, str]:
        """The names module ``m`` binds to a package class (or a package module, for ``x.Base``)."""
        names = {node.name: f"{m}.{node.name}" for node in ast.walk(trees[m]) if isinstance(node, ast.ClassDef)}
        package = m if str(MODULES.get(m, "")).endswith("__init__.py") else m.rsplit(".", 1)[0]
        for node in ast.walk(trees[m]):
            if isinstance(node, ast.ImportFrom):
                parts = package.split(".")
                base = parts[:len(parts) - node.level + 1] if node.level else []
                source = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    names[alias.asname or alias.name] = f"{source}.{alias.name}"
        return names

    scopes = {m: scope(m) for m in trees}

    def resolve(name: str, seen=()) -> str | None:
        """The class a dotted name names: defined there, or re-exported by a module's import."""
        if name in classes:
            return name
        module, _, attr = name.rpartition(".")
        target = scopes.get(module, {}).get(attr)
        return resolve(target, seen + (name,)) if target and target != name and name not in seen else None

    def methods(qualified: str, seen=()) -> set[str]:
        node = classes[qualified]
        module = qualified[:qualified.rfind("." + node.name)]
        own = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for base in node.bases:
            dotted = ast.unparse(base)
            head, _, rest = dotted.partition(".")
            bound = scopes[module].get(head)
            found = resolve(f"{bound}.{rest}" if bound and rest else bound or "")
            if found and found not in seen:
                own |= methods(found, seen + (qualified,))
        return own

    return {name: len(methods(name)) for name in classes}


def test_no_class_has_over_30_methods_counting_inherited_ones():
    counts = method_counts({m: path.read_text(encoding="utf-8") for m, path in MODULES.items()})
    assert counts["lmad.plan.Plan"] > 5 and counts["lmad.plan.lmad_stages.LmadPlan"] > 5  # the checker sees them
    over = {name: n for name, n in counts.items() if n > MAX_METHODS}
    assert not over, f"classes over {MAX_METHODS} methods (compose them of components instead): {over}"


def test_the_method_count_follows_package_bases():
    sources = {
        "lmad.a": "class A:\n" + "".join(f"    def a{i}(self): ...\n" for i in range(20)),
        "lmad.b": "from .a import A\nclass B(A):\n" + "".join(f"    def b{i}(self): ...\n" for i in range(11))
                  + "    def a0(self): ...\n",
        "lmad.c": "from . import b\nclass C(b.B, dict):\n    def c(self): ...\n",
    }
    assert method_counts(sources) == {"lmad.a.A": 20, "lmad.b.B": 31, "lmad.c.C": 32}
