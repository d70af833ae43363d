"""Checks of a workflow config that its JSON schema cannot express; rules/common.smk runs them
before any job, so a mistake fails at once and names its key."""
from __future__ import annotations

from . import studies
from .backend_registry import backend
from .committees import is_committee
from .data.loaders import dataset_type
from .paper import wdh as wdh_table1
from .protocols.debate import setting_of
from .registry import method
from .societies import check_split_size, configured_size, size_key, sweep_sizes, transfer_only


def schema_error(config: dict, schema_file: str) -> str | None:
    """The schema's most relevant complaint about ``config`` as one line naming the key, or None.
    (Snakemake's own message prints the whole schema, hundreds of lines, around it.)"""
    import jsonschema

    from .config_schema import schema as completed

    schema = completed(schema_file)  # the registries' lists filled in (lmad.config_schema)
    validator = jsonschema.validators.validator_for(schema)(schema)
    best = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if best is None:
        return None
    where = ".".join(str(p) for p in best.absolute_path) or "(top level)"
    return f"config {where}: {best.message[:500]}"


def check_method_names(config: dict) -> None:
    """Run before the schema: a method name the registry lacks fails with why (an unknown society,
    a society on a method that does not debate), not with the schema's list of every name."""
    for name in config.get("methods") or []:
        try:
            method(name)
        except ValueError as e:
            raise ValueError(f"config methods: {e}") from None


def serve_by_default(config: dict) -> None:
    """A vLLM model without a ``serve`` setting is served: one engine per model per run, shared
    by every stage job (lmad.backends.serve), instead of one engine load per job. The exception is a
    backbone whose next-token log-probabilities the layer-D probe reads, which only the
    embedded engine exposes. Set in place, so every rule and the manifest see the same entry."""
    probed = set(config["backbones"]) if (config.get("disagreement") or {}).get("probe") else set()
    for name, spec in config["models"].items():
        if backend(spec["backend"]).served_by and "serve" not in spec:
            spec["serve"] = name not in probed


def check_config(config: dict, allow_test_double: bool) -> None:
    # The deterministic test double exists for the test suite; a user config cannot use it.
    if not allow_test_double:
        for name, model in config["models"].items():
            if backend(model["backend"]).test_only:
                raise ValueError(
                    f"config models.{name}.backend: {model['backend']!r} is the test double and is only "
                    "allowed in the test suite (LMAD_ALLOW_TEST_DOUBLE=1)"
                )
    check_committees(config)
    for backbone in [b for b in config["backbones"] if is_committee(config, b)]:
        check_committee_methods(backbone, config)
    for name in [*[b for b in config["backbones"] if not is_committee(config, b)], config["judge"]["model"]]:
        if name not in config["models"]:
            raise ValueError(f"config: model {name!r} is used but not defined under 'models'")
    for name in config.get("backbone_n") or {}:
        if name not in config["backbones"]:
            raise ValueError(f"config backbone_n.{name}: not one of the backbones {config['backbones']}")
    for name, spec in config["datasets"].items():
        dataset_type(name, spec)
    for name in studies.STUDIES:  # each study checks its own section (lmad.studies)
        check = getattr(studies.planning(name), "check_config", None)
        if check:
            check(config)
    for name in config["methods"]:
        if method(name).family == "debate":
            setting_of(name, config)  # a bad per-method setting (or a society while societies are off) fails here
        elif method(name).society:
            check_lmad_society(name, config)
    check_society_split(config)
    wdh_table1.check_config(config)


def check_society_split(config: dict) -> None:
    """Config ``societies.split`` against the run's benchmarks, before any job: ``construct_on``
    names benchmarks of the run, and a benchmark that constructs its own society and whose
    question count the config fixes (every dataset's ``n`` and no smaller ``backbone_n``) has
    more questions than every construction size. A count the config leaves open (``n: null``)
    is checked by rule society_split, before any model call."""
    societies = config.get("societies") or {}
    if not societies.get("enabled"):
        return
    split = societies.get("split") or {}
    benchmarks: dict[str, list] = {}
    for name, spec in config["datasets"].items():
        benchmarks.setdefault(dataset_type(name, spec), []).append(spec.get("n"))
    construct_on = split.get("construct_on") or {}
    for name in [*construct_on, *construct_on.values()]:
        if name not in benchmarks:
            raise ValueError(f"config societies.split.construct_on: {name!r} is not a benchmark of the run; "
                             f"its benchmarks: {sorted(benchmarks)}")
    caps = [n for n in (config.get("backbone_n") or {}).values() if n is not None]
    for bench, counts in benchmarks.items():
        if bench in transfer_only(construct_on) or any(n is None for n in counts):
            continue
        n = sum(min([c, *caps]) for c in counts)  # backbone_n caps each dataset's sample
        check_split_size(bench, n, int(split.get("size", 50)), sweep_sizes(split))


def check_lmad_society(name: str, config: dict) -> int:
    """The member count of an LMAD method's society (``lmad+ac-greedy``): its agents. Fails, naming
    the key, while societies are off or when the society has fewer than two members (one agent
    never disagrees, so LMAD would never localize)."""
    selector = method(name).society
    size = configured_size(name, selector, config)
    if size < 2:
        raise ValueError(f"config {size_key(selector)}: the {selector} society has {size} member(s); LMAD with a "
                         "society needs at least 2")
    return size


def check_committees(config: dict) -> None:
    """Config ``committees`` (lmad.committees): a name that is no model's, members and role models
    defined under ``models``."""
    for name, entry in (config.get("committees") or {}).items():
        where = f"config committees.{name}"
        if name in config["models"]:
            raise ValueError(f"{where}: the name is also a model under 'models'; a backbone name must say which it is")
        for i, member in enumerate(entry["members"]):
            if member["model"] not in config["models"]:
                raise ValueError(f"{where}.members[{i}].model: {member['model']!r} is not defined under 'models'")
        for role, model in (entry.get("roles") or {}).items():
            if model not in config["models"]:
                raise ValueError(f"{where}.roles.{role}: {model!r} is not defined under 'models'")


def check_committee_methods(backbone: str, config: dict) -> None:
    """What runs on a committee backbone: every debate method (enough members for it) and LMAD
    (at least two members to disagree); not a selected society, matched-tokens SC, the society
    pool or the layer-D probe, which are single-model studies."""
    where = f"config committees.{backbone}.members"
    for name in config["methods"]:
        m = method(name)
        if m.society:
            raise ValueError(f"config methods: {name!r} debates with a selected society of one model's pool; it "
                             f"does not run on committee {backbone!r} (backbones)")
        if name == "sc-matched":
            raise ValueError(f"config methods: 'sc-matched' does not run on committee {backbone!r} (backbones)")
        if m.family == "debate":
            setting_of(name, config, backbone)
        elif m.family == "lmad" and len(config["committees"][backbone]["members"]) < 2:
            raise ValueError(f"{where}: LMAD on a committee needs at least 2 members, got 1")
    if (config.get("societies") or {}).get("enabled"):
        raise ValueError(f"config societies.enabled: the society pool runs on one model; committee {backbone!r} "
                         "is a backbone (backbones)")
    if (config.get("disagreement") or {}).get("probe"):
        raise ValueError(f"config disagreement.probe: layer D reads one model's log-probabilities; committee "
                         f"{backbone!r} is a backbone (backbones)")
