"""The viewer's embedded JSON cannot close its script element and round-trips exactly."""
import json

from lmad.paper.viewer import embed_json, render, table_json


def page(*args) -> str:
    """The viewer page as one text (``render`` gives its UTF-8 pieces)."""
    return b"".join(render(*args)).decode()


def test_embedded_json_is_script_safe():
    nasty = {"question": "a </script><script>alert(1)</script> & <!-- b \u2028", "methods": {}}
    text = embed_json({"questions": [nasty]}).decode()
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["questions"][0] == nasty
    html = page("t </title>", [nasty])
    data = html.split('id="data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["questions"][0]["question"] == nasty["question"]
    assert html.count("</script>") == 2


def test_rounds_and_traces_go_in_as_polars_json_and_stay_script_safe(tmp_path, monkeypatch):
    from lmad.schemas import write_table

    monkeypatch.chdir(tmp_path)
    nasty = "a </script><script>alert(1)</script> & <!-- b \u2028 ü"
    call = {"prompt_tokens": 0, "completion_tokens": 0, "finish_reason": "stop", "cached": False}
    rounds = [f"results/scripted/hotpotqa/mad/round{t}.parquet" for t in (1, 0)]  # any order: sorted by round
    for t, path in ((1, rounds[0]), (0, rounds[1])):
        write_table("samples", [{"qid": "q0", "stage": "mad", "round": t, "agent": a, "temperature": 0.5, "seed": 0,
                                 "response": f"{nasty} {t}{a}", "answer": "Alpha", "answer_norm": "alpha",
                                 "answer_method": "answer_line", **call} for a in (1, 0)], path)
    html = page("t", [{"dataset": "hotpotqa", "qid": "q0", "question": "Which?", "answer": "Alpha", "aliases": [],
                         "context": [], "methods": {}, "labels": {}}], "", "", table_json(rounds=rounds))
    data = html.split('id="data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and ">" not in data and "&" not in data
    parsed = json.loads(data)
    assert [(g["dataset"], g["method"], g["round"]) for g in parsed["rounds"]] == [("hotpotqa", "mad", 0),
                                                                                  ("hotpotqa", "mad", 1)]
    assert [r["response"] for r in parsed["rounds"][1]["rows"]] == [f"{nasty} 10", f"{nasty} 11"]
    assert parsed["traces"] == []


def _data(html: str) -> dict:
    return json.loads(html.split('id="data">', 1)[1].split("</script>", 1)[0])


def test_turn_labels_of_the_disagreement_layers(tmp_path, monkeypatch):
    """Layers A, B, C per debate turn (debate round and LMAD local round); B's labels only
    when its judge PASSED, otherwise that it FAILED; no input, no label."""
    from lmad.paper.viewer import collect, turn_labels
    from lmad.schemas import write_table

    monkeypatch.chdir(tmp_path)
    call = {"prompt_tokens": 0, "completion_tokens": 0, "finish_reason": "stop", "cached": False}
    q = {"qid": "q0", "dataset": "hotpotqa", "benchmark": "hotpotqa", "question": "Which?", "context": [],
         "answer": "Alpha", "aliases": [], "qtype": "", "supporting_facts": [], "source": ""}
    write_table("questions", [q], "questions.parquet")
    full = json.dumps({"agreement": "full", "changed_mind": "no"})
    none = json.dumps({"agreement": "none", "changed_mind": "yes"})
    steps = "results/scripted/hotpotqa/mad@hostile/round1_steps.parquet"
    write_table("debate_steps", [
        {"qid": "q0", "round": 1, "step": step, "agent": a, "target": -1, "slot": 0, "temperature": 0.5,
         "seed": n, "response": "", "parsed": parsed, "parse_error": "", **call}
        for n, (step, a, parsed) in enumerate([("self_report", 0, full), ("self_report", 1, ""),
                                               ("persist_removed", 0, none), ("persist_kept", 0, full)])], steps)
    reports = "results/scripted/disagreement/lmad_self_report.parquet"
    write_table("lmad_self_reports", [
        {"dataset": "hotpotqa", "method": "lmad@hostile", "qid": "q0", "iteration": 1, "round": 1, "agent": 2,
         "step": "self_report", "temperature": 0.5, "seed": 0, "response": "", "parsed": none, "parse_error": "",
         **call}], reports)
    labels = "results/scripted/disagreement/pushback.parquet"
    write_table("pushback_labels", [
        {"dataset": "hotpotqa", "method": m, "qid": "q0", "iteration": k, "round": 1, "agent": a, "parent": "",
         "reply": "", "judge_model": "j", "stance": "disagree", "move": "challenge", "raw": "", "parse_error": "",
         **call} for m, k, a in (("mad@hostile", 0, 0), ("lmad@hostile", 1, 2))], labels)

    def validation(passed):
        path = f"{passed}.parquet"
        write_table("pushback_validation", [
            {"judge_model": "j", "n_rebuttals": 4, "n_endorsements": 4, "rebuttal_recall": 1.0,
             "endorsement_recall": 1.0 if passed else 0.0, "n_unparsed": 0, "min_recall": 0.8, "passed": passed,
             "reason": "both recalls reach the floor" if passed else "endorsements"}], path)
        return [path]

    by_turn, note = turn_labels([steps], [reports], [labels], validation(True))
    mad, lmad = by_turn[("hotpotqa", "q0")]["mad@hostile"], by_turn[("hotpotqa", "q0")]["lmad@hostile"]
    assert mad["0:1:0"] == {"A": "full (changed mind: no)", "B": "disagree / challenge",
                            "C removed": "none (changed mind: yes)", "C kept": "full (changed mind: no)"}
    assert mad["0:1:1"] == {"A": "unparsable"}
    assert lmad["1:1:2"] == {"A": "none (changed mind: yes)", "B": "disagree / challenge"}
    html = page("t", collect(["questions.parquet"], [], by_turn), "", note)
    data = _data(html)
    assert data["pushback"]["passed"] and data["questions"][0]["labels"]["mad@hostile"]["0:1:0"]["B"]

    failed, note = turn_labels([steps], [reports], [labels], validation(False))
    assert "FAILED" in note and not any("B" in v for m in failed[("hotpotqa", "q0")].values() for v in m.values())
    rounds = []
    for t in (0, 1):  # the debate's rounds, so the page has turns to label
        rounds.append(f"results/scripted/hotpotqa/mad@hostile/round{t}.parquet")
        write_table("samples", [{"qid": "q0", "stage": "mad@hostile", "round": t, "agent": a, "temperature": 0.5,
                                 "seed": 0, "response": f"r{t}{a}", "answer": "Alpha", "answer_norm": "alpha",
                                 "answer_method": "answer_line", **call} for a in (0, 1)], rounds[-1])
    html = page("t", collect(["questions.parquet"], [], failed), "", note, table_json(rounds=rounds))
    data = _data(html)
    assert data["pushback"] == {"note": note, "passed": False}
    dom = _dom(html, tmp_path)
    if dom is not None:  # rendered: each turn says B's judge FAILED, A and C stay
        assert "A self-report: full (changed mind: no) · B pushback: judge FAILED its validation, labels not shown" \
            " · C re-ask, tone removed: none (changed mind: yes); kept: full (changed mind: no)" in dom
        assert "A self-report: unparsable · B pushback: judge FAILED" in dom and 'id="pushback-note"' in dom

    # layers off: no input, no label, no note; the page is what it was
    assert turn_labels() == ({}, "")
    data = _data(page("t", collect(["questions.parquet"], []), ""))
    assert data["pushback"] is None and data["questions"][0]["labels"] == {}


def _dom(html: str, tmp_path):
    """The page as headless Chromium renders it (None without Chromium: the data checks stand)."""
    import shutil
    import subprocess

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    page = tmp_path / "viewer.html"
    page.write_text(html)
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120).stdout
