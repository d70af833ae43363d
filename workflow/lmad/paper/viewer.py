"""A self-contained static HTML trace viewer of one backbone's run (no server, no network).

The data is embedded as JSON in ``<script type="application/json">``; every ``<``, ``>`` and ``&``
is written as a ``\\u00XX`` escape, so no question or model output can close the script
element (``</script>``) or open a comment. Debate rounds and LMAD traces go in as each table's
rows, JSON written by polars, and the page files them under their questions when it loads: a
row never becomes a Python object (4 x 500 questions, L = 10: 4.1 -> 2.4 s for the job,
which is on the run's last stretch, after the judge). Inline JS renders one question at a time: question,
context, each method's prediction and judge decision, each debate method's rounds, and LMAD's
iterations (chains with the localized segment, conflict, positions, repair, guard checks); a graph
LMAD method's claims are drawn as their graph (premise edges, columns by depth, the segment and
its witnesses marked).

With the disagreement layers on, each debate turn (a debate method's round t >= 1, an LMAD
local-debate round) also shows its labels: layer A's self-report, layer B's blind pushback
label only when that judge PASSED its battery (otherwise that it FAILED, never its labels),
and layer C's re-asks (tone deleted / kept) where the turn was sampled. Every such input is
optional: without them the viewer is what it was.
"""
from __future__ import annotations

import io
import json
import re
from collections import defaultdict

from .. import layout
from ..atomic import replacing
from ..schemas import read_table
from .figures import group_rounds


# what must not appear raw in the script element, as UTF-8 bytes: the page's JSON is bytes from
# polars to the file (4 x 500 questions, L = 10: ~90 MB), never one Python string (a string with one
# non-Latin-1 character holds 2-4 bytes a character, and each splice copied all of it)
_UNSAFE = tuple((c.encode(), f"\\u{ord(c):04x}".encode()) for c in "<>&\u2028\u2029")


def _script_safe(data: bytes) -> bytes:
    for raw, escaped in _UNSAFE:
        data = data.replace(raw, escaped)
    return data


def embed_json(data) -> bytes:
    """``data`` as script-safe JSON (UTF-8)."""
    return _script_safe(json.dumps(data, ensure_ascii=False, sort_keys=True, default=str).encode())


def _frame_json(frame) -> bytes:
    buf = io.BytesIO()
    frame.write_json(buf)
    return buf.getvalue()


def table_json(traces: list[str] = (), rounds: list[str] = ()) -> dict[str, bytes]:
    """The debate rounds (``rounds``: one entry per dataset, method and round, with the agents'
    answers and responses) and LMAD traces (``traces``: one array of rows per table) as JSON
    (UTF-8), for ``render`` to embed and the page to file under their questions (``attach``)."""
    parts = []
    for (_, d, m), paths in group_rounds(rounds).items():
        for t, p in enumerate(paths):
            rows = read_table("samples", p).sort("qid", "agent").select("qid", "agent", "answer", "response")
            head = f'{{"dataset": {json.dumps(d)}, "method": {json.dumps(m)}, "round": {t}, "rows": '.encode()
            parts.append(head + _frame_json(rows) + b"}")
    traced = (_frame_json(read_table("lmad_trace", p).sort("iteration", maintain_order=True)) for p in traces)
    return {"rounds": b"[" + b", ".join(parts) + b"]", "traces": b"[" + b", ".join(traced) + b"]"}


def _self_report(parsed: str) -> str:
    if not parsed:
        return "unparsable"
    label = json.loads(parsed)
    return f"{label['agreement']} (changed mind: {label['changed_mind']})"


def turn_labels(steps: list[str] = (), lmad_reports: list[str] = (), labels: list[str] = (),
                validation: list[str] = ()) -> tuple[dict, str]:
    """The disagreement layers' labels of every debate turn: ``{(dataset, qid): {method:
    {"iteration:round:agent": {"A", "B", "C removed", "C kept"}}}}`` (a key only where that layer
    labelled the turn; an unparsable reply reads "unparsable"), and the line saying whether layer
    B's judge passed (empty when layer B is off). A FAILED judge's labels are left out, as in
    the disagreement table. ``steps``: debate rounds' ``debate_steps``; ``lmad_reports``:
    ``lmad_self_reports``; ``labels``: ``pushback_labels``; ``validation``: its validation."""
    from ..disagreement_labels import PERSIST_KEPT, PERSIST_REMOVED, SELF_REPORT_STEP
    from ..studies.disagreement.pushback import validation_line

    field = {SELF_REPORT_STEP: "A", PERSIST_REMOVED: "C removed", PERSIST_KEPT: "C kept"}
    out: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))

    def put(dataset, method, r, key, value):
        out[(dataset, r["qid"])][method][f"{r.get('iteration', 0)}:{r['round']}:{r['agent']}"][key] = value

    for p in steps:
        where = layout.parse(p)
        for r in read_table("debate_steps", p).to_dicts():
            if r["step"] in field:
                put(where.dataset, where.method, r, field[r["step"]], _self_report(r["parsed"]))
    for p in lmad_reports:
        for r in read_table("lmad_self_reports", p).to_dicts():
            put(r["dataset"], r["method"], r, field[r["step"]], _self_report(r["parsed"]))
    note = ""
    if validation:
        v = read_table("pushback_validation", validation[0]).to_dicts()[0]
        note = validation_line(v)
        if v["passed"]:
            for p in labels:
                for r in read_table("pushback_labels", p).to_dicts():
                    put(r["dataset"], r["method"], r, "B",
                        f"{r['stance']} / {r['move']}" if r["stance"] else "unparsable")
    return out, note


def collect(questions: list[str], judgments: list[str], labels: dict | None = None) -> list[dict]:
    """Every question with its methods' predictions and judge decisions; ``labels``:
    ``turn_labels``' first value (none: no label is shown). Its debate rounds and LMAD
    iterations are ``table_json``'s, joined in the page."""
    qs = {}
    for p in questions:
        for r in read_table("questions", p).to_dicts():
            qs[(r["dataset"], r["qid"])] = {
                "dataset": r["dataset"], "qid": r["qid"], "question": r["question"], "answer": r["answer"],
                "aliases": r["aliases"], "context": [{"title": c["title"], "text": " ".join(c["sentences"])}
                                                     for c in r["context"] or []],
                "methods": {}, "labels": (labels or {}).get((r["dataset"], r["qid"]), {})}
    for p in judgments:
        for r in read_table("judgments", p).to_dicts():
            q = qs.get((r["dataset"], r["qid"]))
            if q is not None:
                q["methods"][r["method"]] = {k: r[k] for k in ("prediction", "judge_verdict", "judge_correct", "em",
                                                               "judge_raw")}
    return [qs[k] for k in sorted(qs)]


_CSS = """body{font:14px system-ui,sans-serif;margin:0;display:flex;height:100vh}
#list{width:280px;overflow:auto;border-right:1px solid #ccc}#list div{padding:4px 8px;cursor:pointer;border-bottom:1px solid #eee}
#list div.sel{background:#def}#main{flex:1;overflow:auto;padding:12px 20px}h2{margin:.2em 0}h3{margin:1em 0 .3em}
.ok{color:#070}.bad{color:#b00}.node{display:inline-block;margin:2px;padding:2px 6px;border-radius:4px;border:1px solid #999}
.committed{background:#9be39b}.segment{background:#ffb35c}.untouched{background:#ddd}.repair{background:#cde}
.gnode{box-sizing:border-box;height:100%;overflow:hidden;font-size:11px;line-height:1.2;padding:2px 4px;border:1px solid #999;border-radius:4px}
.gnode.witness{border:2px solid #000}svg.graph{display:block;margin:2px 0 6px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}
details{margin:4px 0}.labels{font-size:12px;color:#555;margin:0 0 4px 1.2em}pre{white-space:pre-wrap;margin:0}#filter{width:95%;margin:4px}"""

_JS = r"""const DATA=JSON.parse(document.getElementById('data').textContent);
(function attach(){const at={},key=(d,q)=>d+'\n'+q;
DATA.questions.forEach(q=>{at[key(q.dataset,q.qid)]=q;q.debates={};q.lmad={};});
for(const g of DATA.rounds||[])for(const r of g.rows){const q=at[key(g.dataset,r.qid)];if(!q)continue;
const rs=q.debates[g.method]=q.debates[g.method]||{};(rs[g.round]=rs[g.round]||[]).push({agent:r.agent,answer:r.answer,response:r.response});}
DATA.questions.forEach(q=>{for(const m in q.debates){const rs=q.debates[m];q.debates[m]=Object.keys(rs).map(Number).sort((a,b)=>a-b).map(t=>rs[t]);}});
for(const rows of DATA.traces||[])for(const r of rows){const q=at[key(r.dataset,r.qid)];if(q)(q.lmad[r.method]=q.lmad[r.method]||[]).push(r);}})();
function el(tag,attrs,...kids){const e=document.createElement(tag);for(const[k,v]of Object.entries(attrs||{}))e.setAttribute(k,v);
for(const c of kids){if(c==null)continue;e.append(c instanceof Node?c:String(c));}return e;}
function mark(c){return c===1?el('span',{class:'ok'},'✔'):c===0?el('span',{class:'bad'},'✘'):'–';}
function labels(q,meth,key){const L=((q.labels||{})[meth]||{})[key]||{},P=DATA.pushback,out=[];
if(L.A)out.push('A self-report: '+L.A);if(L.B)out.push('B pushback: '+L.B);
else if(P&&!P.passed)out.push('B pushback: judge FAILED its validation, labels not shown');
if(L['C removed']||L['C kept'])out.push('C re-ask, tone removed: '+(L['C removed']||'–')+'; kept: '+(L['C kept']||'–'));
return out.length?el('div',{class:'labels'},out.join(' · ')):null;}
function chain(nodes,cls){const d=el('div');(nodes||[]).forEach((n,i)=>d.append(el('span',{class:'node '+cls(i)},n)));return d;}
function svg(tag,attrs){const e=document.createElementNS('http://www.w3.org/2000/svg',tag);for(const[k,v]of Object.entries(attrs))e.setAttribute(k,v);return e;}
function graph(nodes,prem,src,seg,wit){const W=190,H=40,GX=36,GY=10,dep=[],row={},pos=[];
prem.forEach(ps=>dep.push(1+Math.max(-1,...ps.map(p=>dep[p-1]??-1))));
nodes.forEach((n,i)=>{const c=dep[i]||0;row[c]=row[c]||0;pos.push([6+c*(W+GX),6+row[c]*(H+GY)]);row[c]++;});
const s=svg('svg',{class:'graph',width:12+(Math.max(0,...dep)+1)*(W+GX)-GX,height:12+Math.max(1,...Object.values(row))*(H+GY)-GY});
const defs=svg('defs',{}),mk=svg('marker',{id:'arrow',viewBox:'0 0 10 10',refX:10,refY:5,markerWidth:6,markerHeight:6,orient:'auto'});
mk.append(svg('path',{d:'M0,0L10,5L0,10z',fill:'#555'}));defs.append(mk);s.append(defs);
prem.forEach((ps,i)=>ps.forEach(p=>{const[a,b]=pos[p-1],[c,d]=pos[i];
s.append(svg('path',{d:`M${a+W},${b+H/2} C${a+W+GX/2},${b+H/2} ${c-GX/2},${d+H/2} ${c},${d+H/2}`,fill:'none',stroke:'#555','marker-end':'url(#arrow)'}));}));
nodes.forEach((n,i)=>{const[x,y]=pos[i],f=svg('foreignObject',{x:x,y:y,width:W,height:H}),t=i+1;
const cls='gnode '+(seg.includes(t)?'segment':'untouched')+(wit.includes(t)?' witness':'');
const box=el('div',{class:cls,title:n+((src||[])[i]?' [passage '+src[i]+']':'')},t+'. '+n);f.append(box);s.append(f);});return s;}
function show(i){document.querySelectorAll('#list div').forEach((d,j)=>d.classList.toggle('sel',j===i));
const q=DATA.questions[i],m=document.getElementById('main');m.innerHTML='';
m.append(el('h2',{id:'question'},q.question),el('div',{},'gold: ',el('b',{},q.answer),' ',(q.aliases||[]).join(' / '),' — ',q.dataset,' ',q.qid));
const ctx=el('details',{},el('summary',{},'context ('+q.context.length+' paragraphs)'));
q.context.forEach(c=>ctx.append(el('p',{},el('b',{},c.title+': '),c.text)));m.append(ctx);
if(DATA.pushback)m.append(el('p',{id:'pushback-note',class:DATA.pushback.passed?'':'bad'},DATA.pushback.note));
m.append(el('h3',{},'Predictions and judge'));if(DATA.judge_note)m.append(el('p',{id:'judge-note',class:DATA.judge_note.includes('FAILED')?'bad':''},DATA.judge_note));const t=el('table',{},el('tr',{},el('th',{},'method'),el('th',{},'prediction'),el('th',{},'judge'),el('th',{},'EM')));
for(const[k,v]of Object.entries(q.methods))t.append(el('tr',{},el('td',{},k),el('td',{},v.prediction),el('td',{title:v.judge_raw||''},mark(v.judge_correct),' ',v.judge_verdict||''),el('td',{},mark(v.em))));m.append(t);
for(const[meth,rounds]of Object.entries(q.debates)){const d=el('details',{},el('summary',{},meth+': '+rounds.length+' rounds'));
rounds.forEach((r,ri)=>{d.append(el('h4',{},'round '+ri));r.forEach(a=>d.append(el('details',{},el('summary',{},'agent '+a.agent+': '+a.answer),el('pre',{},a.response)),ri?labels(q,meth,'0:'+ri+':'+a.agent):null));});m.append(d);}
for(const[meth,its]of Object.entries(q.lmad)){m.append(el('h3',{},meth));
its.forEach(it=>{const d=el('div',{class:'iteration'});d.append(el('h4',{},'iteration '+it.iteration+(it.agreed?' — agents agree':'')+(it.stop_reason?' — stop: '+it.stop_reason:'')));
if((it.committed_before||[]).length)d.append(el('div',{},'committed: '),chain(it.committed_before,()=> 'committed'));
(it.chains||[]).forEach((c,a)=>{const w=(it.witness||[])[a]||0,P=(it.premises||[])[a]||[],G=(it.graph_fallbacks||[])[a];
d.append(el('div',{},'agent '+a+' → '+(it.answers||[])[a]+(G?' (graph fell back to the chain: '+G+')':'')));
if(P.length===c.length&&c.length)d.append(graph(c,P,(it.sources||[])[a],(it.segment_indices||[])[a]||[],(it.witnesses||[])[a]||[w]));
else d.append(chain(c,i=>i<w?'segment':'untouched'));});
if(it.conflict)d.append(el('div',{},el('b',{},'conflict: '),it.conflict));
(it.positions||[]).forEach((ps,r)=>{d.append(el('div',{},el('b',{},'positions r'+r+': '),ps.join(' | ')));
if(r)ps.forEach((_,a)=>{const l=labels(q,meth,it.iteration+':'+r+':'+a);if(l){l.prepend('agent '+a+': ');d.append(l);}});});
if((it.repair_nodes||[]).length){d.append(el('div',{},el('b',{},'repair ('+(it.admitted?'admitted':'rejected')+'):')),chain(it.repair_nodes,()=> 'repair'));
d.append(el('div',{},'quotes: '+(it.quotes||[]).join(' | ')));}
if((it.checks||[]).length){const ct=el('table');it.checks.forEach(c=>ct.append(el('tr',{},el('td',{},c.check),el('td',{},mark(c.passed?1:0)),el('td',{},c.required?'required':''),el('td',{},c.detail||''))));d.append(ct);}
d.append(el('div',{},'prediction after: '+(it.prediction||'')));m.append(d);});}}
const list=document.getElementById('list');
DATA.questions.forEach((q,i)=>{const d=el('div',{},q.dataset+' '+q.qid);d.title=q.question;d.onclick=()=>show(i);list.append(d);});
document.getElementById('filter').oninput=e=>{const s=e.target.value.toLowerCase();
document.querySelectorAll('#list div').forEach((d,i)=>d.style.display=(d.title+d.textContent).toLowerCase().includes(s)?'':'none');};
if(DATA.questions.length)show(0);"""


def render(title: str, questions: list[dict], judge_note: str = "", pushback_note: str = "",
           tables: dict[str, bytes] | None = None) -> list[bytes]:
    """The page as UTF-8 pieces in order. ``pushback_note``: layer B's validation line (empty:
    layer B off); its labels are in ``questions`` only when it passed. ``tables``: ``table_json``'s
    (none: no round, no trace), spliced into the data object as written: already JSON."""
    pushback = {"note": pushback_note, "passed": "validation PASSED" in pushback_note} if pushback_note else None
    data = embed_json({"title": title, "questions": questions, "judge_note": judge_note, "pushback": pushback})
    safe_title = re.sub(r"[<>&\"']", "", title)
    parts = [(f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{safe_title}</title>"
              f"<style>{_CSS}</style></head><body><nav><input id=\"filter\" placeholder=\"filter\">"
              f"<div id=\"list\"></div></nav><main id=\"main\"></main>"
              f"<script type=\"application/json\" id=\"data\">").encode(), data[:-1]]
    for name, text in (tables or {}).items():
        parts += [f", {json.dumps(name)}: ".encode(), _script_safe(text)]
    parts.append(f"}}</script><script>{_JS}</script></body></html>\n".encode())
    return parts


def write(questions: list[str], judgments: list[str], traces: list[str], rounds: list[str], html: str,
          head=None, steps: list[str] = (), lmad_reports: list[str] = (), labels: list[str] = (),
          pushback_validation: list[str] = ()) -> None:
    """``head`` (lmad.headline.Headline): the judge's validation, shown above every judge column;
    the rest (optional): the disagreement layers' tables (``turn_labels``)."""
    backbone = layout.parse(judgments[0]).backbone if judgments else ""
    note = f"{head.warning} {head.validation}".strip() if head else ""
    by_turn, pushback_note = turn_labels(steps, lmad_reports, labels, pushback_validation)
    parts = render(f"LMAD trace viewer — {backbone}", collect(questions, judgments, by_turn), note,
                         pushback_note, table_json(traces, rounds))
    with replacing(html) as tmp, open(tmp, "wb") as f:
        f.writelines(parts)
