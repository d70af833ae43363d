"""The viewer's embedded JSON cannot close its script element and round-trips exactly."""
import json

from lmad.paper.viewer import embed_json, render


def test_embedded_json_is_script_safe():
    nasty = {"question": "a </script><script>alert(1)</script> & <!-- b \u2028", "methods": {}}
    text = embed_json({"questions": [nasty]})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["questions"][0] == nasty
    html = render("t </title>", [nasty])
    data = html.split('id="data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["questions"][0]["question"] == nasty["question"]
    assert html.count("</script>") == 2
