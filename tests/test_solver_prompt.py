"""The solver's output line follows the question's answer type, read from the question only."""
import pathlib

from lmad.prompts import answer_type, load_prompt
from lmad.solver import solver_request

REPO = pathlib.Path(__file__).resolve().parents[1]


def q(dataset, question, qtype, answer="x"):
    return {"qid": "q", "dataset": dataset, "benchmark": dataset,
            "answer_type": "yes_no" if dataset == "strategyqa" else "span",
            "question": question, "qtype": qtype, "answer": answer, "context": []}


def test_answer_type_and_line():
    cases = [(q("strategyqa", "Could a llama birth twice during the War in Vietnam?", "boolean"), "yes/no"),
             (q("hotpotqa", "Were Scott Derrickson and Ed Wood of the same nationality?", "comparison"), "yes/no"),
             (q("hotpotqa", "Which is older, the Rhine or the Danube?", "comparison"), "short"),
             (q("hotpotqa", "Is the band from Gunma?", "bridge"), "yes/no"),  # the wording asks yes or no
             (q("musique", "Who founded the company?", "2hop"), "short")]
    prompt = load_prompt(REPO / "config" / "prompts" / "solver.txt")
    for question, kind in cases:
        assert answer_type(question) == kind, question["question"]
        user = dict(solver_request(prompt, question, 0.1, 0, 64).messages)["user"]
        assert user.endswith('"Answer: yes" or "Answer: no".' if kind == "yes/no" else '"Answer: <short answer>".')
    # the gold answer plays no part
    assert answer_type(q("hotpotqa", "Which is older, A or B?", "comparison", answer="yes")) == "short"
