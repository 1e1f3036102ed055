"""The one-step input flow that evolve's proposer mines from and GEPA's reflection picks sinks from.

Plain string work over code lines, so the cases are a few lines of code each; the last test
checks that both clients name the same call on the same file.
"""

from __future__ import annotations

from engine.evaluation.patches.input_flow import (
    calls,
    carries_input,
    handoffs,
    input_names,
)
from engine.evaluation.patches.material import CaseMaterial, CodeLine
from engine.evaluation.patches.mining import fn_patterns
from engine.loops.gepa.sinks import sinks

PROXY = (
    "def image(request):\n"
    '    src = request.args.get("src")\n'
    '    log.info("fetching an image")\n'
    "    body = requests.get(src, timeout=3).content\n"
    "    return base64.b64encode(body)\n"
)


def case_of(path: str, code: str) -> CaseMaterial:
    lines = tuple(CodeLine(path, n, text) for n, text in enumerate(code.splitlines(), 1))
    return CaseMaterial("case", "vulnerable", "FN", None, lines)


def test_keywords_before_a_parenthesis_are_not_calls() -> None:
    line = (
        "return (Session) new ValidatingObjectInputStream(in).accept(Session.class).readObject();"
    )
    assert [m.group(1) for m in calls(line)] == [
        "ValidatingObjectInputStream",
        "accept",
        "readObject",
    ]
    assert [m.group(1) for m in calls("if (ok) { while (x) run(y); }")] == ["run"]


def test_input_is_held_by_parameters_and_by_variables_assigned_from_it() -> None:
    case = case_of("proxy.py", PROXY)
    assert input_names(case, ["request.args"]) >= {"request", "src", "body"}
    assert carries_input('"fetching")', ["request.args"], {"src"}) is False
    assert carries_input('"a " + src)', ["request.args"], {"src"}) is True
    # a name inside a string literal is text, not the variable
    assert carries_input('"src")', [], {"src"}) is False


def test_a_call_is_handed_input_directly_or_through_a_name() -> None:
    code = (
        "def image(request):\n"
        '    src = request.args.get("src")\n'
        '    log.info("fetching an image")\n'
        '    f = open(os.path.join("/srv", request.args["name"]))\n'
        "    body = requests.get(src).content\n"
        "    return image(src)\n"
    )
    found = [
        (h.line.number, h.chain, h.direct, h.depth)
        for h in handoffs(case_of("a.py", code), ["request.args"])
    ]
    assert found == [
        (4, "open", True, 0),
        (4, "os.path.join", True, 1),
        (5, "requests.get", False, 0),
    ]
    # the logging call holds no input, ``request.args.get(`` reads it, ``image(`` is the file's
    # own function, and its definition line declares a parameter rather than calling anything


def test_a_handler_takes_its_input_through_the_request_not_its_outputs() -> None:
    code = (
        "func Serve(w http.ResponseWriter, r *http.Request) {\n"
        '\tname := r.URL.Query().Get("name")\n'
        "\tif err != nil {\n"
        '\t\thttp.Error(w, "not found", http.StatusNotFound)\n'
        "\t}\n"
        "\tq := fmt.Sprintf(\"SELECT * FROM users WHERE name = '%s'\", name)\n"
        "\tio.Copy(w, strings.NewReader(q))\n"
        "}\n"
        "func lookup(db *sql.DB, id string) {\n"
        '\tdb.Exec("DELETE FROM t WHERE id = " + id)\n'
        "}\n"
    )
    case = case_of("x.go", code)
    assert input_names(case, ["r.URL.Query("]) >= {"r", "name", "q", "db", "id"}
    assert "w" not in input_names(case, ["r.URL.Query("])
    chains = [h.chain for h in handoffs(case, ["r.URL.Query("])]
    # the error reply is handed the writer alone; ``io.Copy`` gets ``q`` in its arguments
    assert chains == ["fmt.Sprintf", "io.Copy", "strings.NewReader", "db.Exec"]
    # with no source read from a parameter, every parameter may hold the caller's input
    assert "w" in input_names(case, ["$_GET"])


def test_a_call_reading_a_source_is_not_handed_it() -> None:
    code = 'func Serve(w http.ResponseWriter, r *http.Request) {\n\thttp.Get(r.FormValue("u"))\n}\n'
    chains = [h.chain for h in handoffs(case_of("x.go", code), ["r.FormValue("])]
    assert chains == ["http.Get"]


def test_the_proposer_and_the_reflection_name_the_call_the_input_reaches() -> None:
    case = case_of("proxy.py", PROXY)
    mined = fn_patterns([case], ["request.args"])
    found = sinks(case, ["request.args"])
    # the body read through ``src`` is handed on too: one step of flow, not a sanitiser model
    assert [s.form for s in found] == ["requests.get(", "base64.b64encode("]
    assert {s.pattern for s in found} <= set(mined)
    assert not any("log" in p or "info" in p for p in mined)
