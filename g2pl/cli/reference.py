"""docs/cli.md, generated from the argument parsers themselves (`make docs`; tests/cli/test_ux.py checks it)."""

from __future__ import annotations

import argparse
import textwrap

from g2pl.cli.parsers import g2pl_parser, g2plc_parser


def _md(text: str) -> str:
    """Text for a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _usage_item(act: argparse.Action) -> str:
    if not act.option_strings:
        return act.metavar or act.dest.upper()
    opt = max(act.option_strings, key=len)
    if len(opt) == 2 and act.choices is not None:  # -O0|-O1|-O2
        item = "|".join(f"{opt}{c}" for c in act.choices)
    elif act.nargs == 0:
        item = opt
    else:
        item = f"{opt} {_value(act)}"
    if act.required:
        return item
    return f"[{item}]" + ("..." if isinstance(act, argparse._AppendAction) else "")


def _value(act: argparse.Action) -> str:
    if act.nargs == 0:
        return ""
    if act.metavar:
        return str(act.metavar)
    if act.choices is not None:
        return "|".join(map(str, act.choices))
    return act.dest.upper()


def _section(title: str, p: argparse.ArgumentParser, blurb: str | None) -> list[str]:
    acts = [a for a in p._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    items = [_usage_item(a) for a in acts if not a.option_strings] + [_usage_item(a) for a in acts if a.option_strings]
    usage = textwrap.wrap(" ".join([p.prog] + items), 100, subsequent_indent=" " * (len(p.prog) + 1),
                          break_on_hyphens=False, break_long_words=False)
    out = [f"## `{title}`", "", blurb or p.description or "", "", "```", *usage, "```", "",
           "| argument | value | default | description |", "|---|---|---|---|"]
    for a in acts:
        names = ", ".join(f"`{o}`" for o in a.option_strings) if a.option_strings else f"`{a.dest}`"
        if len(a.option_strings) == 1 and len(a.option_strings[0]) == 2 and a.choices is not None:
            names = ", ".join(f"`{a.option_strings[0]}{c}`" for c in a.choices)
            value = ""
        else:
            value = f"`{_md(_value(a))}`" if _value(a) else ""
        default = a.default
        hidden = default is None or default is False or default == [] or default == argparse.SUPPRESS
        shown = "" if hidden or not a.option_strings else f"`{default}`"
        desc = (a.help or "").replace("%%", "%")  # argparse's escape for a literal %
        if a.choices is not None and a.metavar and not all(str(c) in desc for c in a.choices):
            desc += f" (one of {', '.join(f'`{c}`' for c in a.choices)})"
        if a.required and a.option_strings:
            desc = "required; " + desc
        out.append(f"| {names} | {value} | {shown} | {_md(desc)} |")
    return out + [""]


def cli_reference() -> str:
    """docs/cli.md: every option of `g2plc` and each `g2pl` subcommand, from the parsers themselves."""
    out = [
        "# Command-line reference",
        "",
        "<!-- Generated from the argument parsers by `g2pl.cli.cli_reference()`; do not edit by hand.",
        "     Rewrite it with `make docs`; tests/cli/test_ux.py fails when it is out of date. -->",
        "",
        "Exit status of every command: 0 success, 1 runtime failure, 2 bad input (program, graph, arguments),",
        "with one `error:` message on stderr naming the file (for program errors `FILE:LINE:COL`, the",
        "source line and a caret); `--debug` adds the Python traceback. Results go to stdout; progress,",
        "messages and errors to stderr. `-O0`, `-O1`, `-O2` select the optimization level (default `-O2`).",
        "",
        "Compile cache: `g2pl run` and `g2plc` (writing a module) keep every program's generated modules in",
        "`$G2PL_CACHE_DIR`, else `$XDG_CACHE_HOME/g2pl`, else `$HOME/.cache/g2pl`, keyed by the program's text",
        "and file name, `-O`, the disabled passes, the g2pl version and a hash of the compiler's own files: a",
        "repeated command skips parsing and code generation (and imports no compiler). Compile errors are not",
        "kept. The directory is made 0700; an entry is used only if a per-user secret beside it signs it",
        "(HMAC-SHA256) and it, the directory and the secret belong to you and no one else can write them",
        "(otherwise g2pl warns once and compiles as without a cache). The 256 most recently used entries",
        "(64 MiB) are kept. `--no-cache` or `G2PL_NO_CACHE=1` turns it off; removing the directory empties it.",
        "",
    ]
    out += _section("g2plc", g2plc_parser(), None)
    g2pl = g2pl_parser()
    out += ["## `g2pl`", "", g2pl.description or "", ""]
    for act in g2pl._actions:
        if isinstance(act, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in act._choices_actions}
            out += [f"* [`g2pl {name}`](#g2pl-{name}): {helps.get(name) or ''}" for name in act.choices] + [""]
            for name, sp in act.choices.items():
                out += _section(f"g2pl {name}", sp, (helps.get(name) or "").capitalize() + ".")
    from g2pl.results.formats import REFERENCE as OUTPUT_FILES

    out += OUTPUT_FILES.splitlines()
    return "\n".join(out).rstrip() + "\n"
