"""The rule registry: ``@rule`` declares a rule's identity and docs next to its code.

This is the contract the rules import; the catalogue (``triton_doctor.catalogue``) lists and
selects the registered rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from triton_doctor.findings import Hit, Severity
from triton_doctor.records import record

RULE_ID = re.compile(r"^TD[1-9]\d\d$")
RULE_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DOC_SECTIONS = ("What it checks", "Why it matters", "Example", "Fix")
#: Facts about a model that a model rule's ``when`` names (``ModelView.facts`` decides them
#: once per model), beside ``backend:<name>`` (the effective backend, ``backend:`` for none).
MODEL_FACTS = {
    "ensemble": "platform ensemble",
    "ensemble_scheduling": "an ensemble_scheduling block",
    "batching": "max_batch_size above 0",
    "dynamic_batching": "a dynamic_batching block",
    "sequence_batching": "a sequence_batching block",
    "batch_io": "batch_input or batch_output",
    "warmup": "model_warmup samples",
    "response_cache": "the response cache enabled",
    "model_metrics": "a model_metrics block",
    "runtime": "a runtime named",
    "repo_agents": "repository agents written in config.pbtxt",
    "python_source": "a model.py the Python backend loads",
    "auto_complete_refused": "the backend's auto-complete refuses the model",
    "onnx_file": "a loaded version's model file read as ONNX",
    "unusable_file": "a loaded version's model file its backend cannot use",
    "lfs_pointers": "Git LFS pointer files in the model directory",
}


@record(frozen=True)
class Rule:
    id: str
    name: str
    severity: Severity
    title: str
    #: "model": called once per model with (model, repository); "repository": once with the
    #: repository; "live": once with the LiveView of a running server; "log": once with the
    #: LiveView when a log was read (alone, or beside a server); "fleet": once with the FleetView
    #: of replicas read through Prometheus.
    scope: str
    #: What the rule needs: "config" = a model's parsed (or auto-completed) configuration; for
    #: live rules the Evidence parts ("server", "metrics", "gpu", "container", "host", "log";
    #: "server_state": the server as its own API describes it, not a replica's series alone),
    #: and "static_findings": the static rules' findings of the same run, which the engine
    #: passes after the view.
    needs: tuple[str, ...]
    check: Callable[..., Iterable[Hit]]
    #: Constant runs of the server's own messages that the rule's findings quote: a load error
    #: holding one is explained by this rule (``triton_doctor.server_words``).
    server_says: tuple[str, ...] = ()
    #: Words of lines the server logs while serving (a failed request, memory running out) that
    #: the rule is about; matched as written.
    log_says: tuple[str, ...] = ()
    #: The rule's triton_message passes on the server's text whatever it says (TD601 relays a
    #: model's load error), so it declares no words of its own.
    relays_server: bool = False
    #: A model rule's applicability: the model facts (``MODEL_FACTS``, ``backend:<name>``) of
    #: which a model must have one for the rule to find anything there. The engine calls it
    #: only on those models; empty: on every model. The rule still tests what it needs.
    when: frozenset[str] = frozenset()

    @property
    def doc(self) -> str:
        import inspect  # only where docs are shown: a check need not pay for its import

        return inspect.cleandoc(self.check.__doc__ or "")

    def section(self, heading: str) -> str:
        """One paragraph of the documentation (``Fix``: what an alert carries), on one line."""
        found = re.search(rf"^{re.escape(heading)}:(.*?)(?=\n\s*\n|\Z)", self.doc,
                          re.MULTILINE | re.DOTALL)
        text = " ".join(found.group(1).split()) if found else ""
        return text[:1].upper() + text[1:]

    @property
    def anchor(self) -> str:
        """The id of the rule's heading in docs/rules.md as GitHub and GitLab render it."""
        return f"{self.id.lower()}-{self.name}-{self.severity}"


#: Every registered rule by id: listed by ``triton_doctor.catalogue``, whose import of the rules
#: package fills it, and read by ``triton_doctor.server_words``.
RULES: dict[str, Rule] = {}


def rule(
    id: str,
    name: str,
    severity: str,
    title: str,
    *,
    scope: str = "model",
    needs: tuple[str, ...] = ("config",),
    server_says: tuple[str, ...] = (),
    log_says: tuple[str, ...] = (),
    relays_server: bool = False,
    when: tuple[str, ...] = (),
) -> Callable[[Callable[..., Iterable[Hit]]], Callable[..., Iterable[Hit]]]:
    """Register a rule. Its docstring is its documentation, with the DOC_SECTIONS headings;
    ``server_says`` and ``log_says`` are the server's words it explains, ``when`` the models
    it can apply to (see ``Rule``)."""

    def register(check: Callable[..., Iterable[Hit]]) -> Callable[..., Iterable[Hit]]:
        if not RULE_ID.match(id):
            raise ValueError(f"rule id {id!r} is not TD + 3 digits")
        if not RULE_NAME.match(name):
            raise ValueError(f"rule name {name!r} is not kebab-case")
        taken = {r.name: r.id for r in RULES.values()}
        if id in RULES or name in taken:
            raise ValueError(f"rule {id} {name} is registered twice")
        missing = [s for s in DOC_SECTIONS if f"{s}:" not in (check.__doc__ or "")]
        if missing:
            raise ValueError(f"rule {id} docs lack sections: {', '.join(missing)}")
        if relays_server and server_says:
            raise ValueError(f"rule {id} relays the server's text: it declares no server_says")
        unknown = [f for f in when if f not in MODEL_FACTS and not f.startswith("backend:")]
        if unknown or (when and scope != "model"):
            raise ValueError(f"rule {id} declares when={when!r}: model facts of a model rule")
        RULES[id] = Rule(id, name, Severity.parse(severity), title, scope, needs, check,
                         server_says, log_says, relays_server, frozenset(when))
        return check

    return register


def key_matches(rule_id: str, rule_name: str, key: str) -> bool:
    """How users name rules everywhere: an id (``TD213``), an id prefix (``TD2``) or a name."""
    return rule_id.startswith(key.upper()) or rule_name == key
