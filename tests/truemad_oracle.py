"""Responder of the scripted backend for the TrueMAD table test (config ``responder:
"truemad_oracle:respond"``), answering in the TrueMAD prompt set's boxed forms: an AIME question of
:data:`RIGHT` gets its gold number, any other AIME question a wrong one (so a pooled AIME cell differs
from the mean of its copies); a GPQA-Diamond question a letter outside its options (0 %); any other
multiple-choice question an option letter drawn from the call's seed (so seeds differ)."""
from __future__ import annotations

import csv
import hashlib

from conftest import REPO
from lmad.backends.scripted import ScriptedBackend

_default = ScriptedBackend()._default

#: the two AIME copies of the test: (problem, gold); the first copy has one question, the second three
AIME_A = [("Find the remainder when $2^{10}$ is divided by $1000$.", "24")]
AIME_B = [("How many positive divisors does $36$ have?", "9"), ("Find the sum of the integers from $1$ to $20$.", "210"),
          ("Find the smallest positive integer $n$ such that $n^2 > 500$.", "23")]
RIGHT = {AIME_A[0][0], AIME_B[0][0]}  # 1 of 1 and 1 of 3 right: pooled 50 %, copies' mean 66.67 %
with open(REPO / "data" / "demo" / "gpqa-diamond.csv", newline="") as fh:
    GPQA = [row["Question"] for row in csv.DictReader(fh)]


def respond(req) -> str:
    if req.constraint:  # the judge and structured roles: the backend's own replies
        return _default(req)
    text = req.messages[-1][1]
    for problem, gold in AIME_A + AIME_B:
        if problem in text:
            return f"Working it out.\n\\boxed{{{gold if problem in RIGHT else int(gold) + 1}}}"
    if any(q in text for q in GPQA):
        return "Not sure.\n\\boxed{Z}"
    pick = hashlib.sha256(f"{req.seed}\0{req.temperature}".encode()).digest()[0] % 4
    return f"Thinking it over.\n\\boxed{{({'ABCD'[pick]})}}"
