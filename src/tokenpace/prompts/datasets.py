"""Which dataset a load test sends, from a one-value spec (``--dataset``), GuideLLM-style.

    jsonl:PATH                                     a JSONL file's prompts (prompts/datafiles.py)
    sharegpt:PATH[,turns=N]                        a ShareGPT file's first turns, or chats of up to N turns
    synthetic:input=N,output=N[,input_stdev=N][,output_stdev=N]
    prefix:prefix=N,suffix=N,per_group=N,output=N  groups sharing a prefix (prompts/synthetic.py)
    multiturn:turns=N,input=N,output=N[,input_stdev=N][,output_stdev=N]

Lengths are o200k_base tokens; ``input`` and ``output`` may also be a range ``A-B`` (uniform). No spec: the
workload's fresh prompts (prompts/chains.py's FreshPrompts).
"""

from __future__ import annotations

import re

from tokenpace.config.workloads import Workload
from tokenpace.errors import ConfigError
from tokenpace.prompts.chains import Dataset, FreshPrompts
from tokenpace.prompts.corpus import Corpus
from tokenpace.prompts.datafiles import open_file
from tokenpace.prompts.synthetic import MAX_TOKENS, MIN_INPUT, Lengths, MultiTurn, SharedPrefix, Synthetic

GRAMMAR = (
    "give jsonl:PATH, sharegpt:PATH[,turns=N], synthetic:input=N,output=N[,input_stdev=N][,output_stdev=N], "
    "prefix:prefix=N,suffix=N,per_group=N,output=N[,output_stdev=N] or "
    "multiturn:turns=N,input=N,output=N[,input_stdev=N][,output_stdev=N] (input and output may be a range A-B)"
)
MAX_SPEC = 4096
MAX_CHAT_TURNS = 64
MAX_PER_GROUP = 1000
MAX_CHAIN_TOKENS = 4_000_000  # prompt tokens of one chain, all its requests: ~40 MB built, and built ahead
# kind -> (keys it needs, keys it may have)
_KEYS = {
    "synthetic": (("input", "output"), ("input_stdev", "output_stdev")),
    "prefix": (("prefix", "suffix", "per_group", "output"), ("output_stdev",)),
    "multiturn": (("turns", "input", "output"), ("input_stdev", "output_stdev")),
}
_BOUNDS = {
    "input": (MIN_INPUT, MAX_TOKENS),
    "output": (1, MAX_TOKENS),
    "input_stdev": (0, MAX_TOKENS),
    "output_stdev": (0, MAX_TOKENS),
    "prefix": (MIN_INPUT, MAX_TOKENS),
    "suffix": (MIN_INPUT, MAX_TOKENS),
    "per_group": (1, MAX_PER_GROUP),
    "turns": (1, MAX_CHAT_TURNS),
}
_RANGED = ("input", "output")
_VALUE = re.compile(r"(\d{1,7})(?:-(\d{1,7}))?")


def _fail(spec: str, problem: str) -> ConfigError:
    shown = spec if len(spec) <= 200 else spec[:199] + "…"
    return ConfigError(f"dataset {shown!r}: {problem}; {GRAMMAR}")


def _options(spec: str, kind: str, text: str) -> dict[str, tuple[int, int | None]]:
    """``key=N`` or ``key=A-B`` pairs, each key known to ``kind``, each value within its bounds."""
    needed, optional = _KEYS[kind]
    out: dict[str, tuple[int, int | None]] = {}
    for item in text.split(",") if text else ():
        key, eq, value = item.partition("=")
        if not eq or key not in (*needed, *optional):
            raise _fail(spec, f"{kind} takes {', '.join((*needed, *optional))}, not {item!r}")
        if key in out:
            raise _fail(spec, f"{key} given twice")
        match = _VALUE.fullmatch(value)
        if match is None or (match.group(2) is not None and key not in _RANGED):
            raise _fail(spec, f"{key} must be a whole number" + (" or a range A-B" if key in _RANGED else ""))
        low, high = int(match.group(1)), None if match.group(2) is None else int(match.group(2))
        least, most = _BOUNDS[key]
        for n in (low, high):
            if n is not None and not least <= n <= most:
                raise _fail(spec, f"{key} must be from {least} to {most}, got {n}")
        if high is not None and high < low:
            raise _fail(spec, f"{key}'s range {low}-{high} runs backwards")
        out[key] = (low, high)
    if missing := [k for k in needed if k not in out]:
        raise _fail(spec, f"{kind} needs {', '.join(missing)}")
    return out


def _lengths(spec: str, options: dict[str, tuple[int, int | None]], key: str, minimum: int) -> Lengths:
    low, high = options[key]
    stdev = options.get(f"{key}_stdev", (0, None))[0]
    if high is not None:
        if stdev:
            raise _fail(spec, f"{key} is a range: it takes no {key}_stdev")
        return Lengths((low + high) // 2, low=low, high=high, minimum=minimum)
    return Lengths(low, stdev, minimum=minimum)


def _file(spec: str, kind: str, rest: str, workload: Workload) -> Dataset:
    path, turns = rest, 0
    if kind == "sharegpt" and (match := re.search(r",turns=([^,]*)\Z", rest)):
        path = rest[: match.start()]
        value = match.group(1)
        if not value.isdigit() or not 1 <= int(value) <= MAX_CHAT_TURNS:
            raise _fail(spec, f"turns must be a whole number from 1 to {MAX_CHAT_TURNS}")
        turns = int(value)
    if not path:
        raise _fail(spec, "the file's path is missing")
    return open_file(kind, path, workload.max_tokens, turns)


def open_dataset(spec: str | None, workload: Workload, seed: int, corpus: Corpus | None = None) -> Dataset:
    """The dataset ``spec`` names (None: the workload's fresh prompts); files' default max_tokens: the workload's."""
    if spec is None:
        return FreshPrompts(workload, seed, corpus)
    if len(spec) > MAX_SPEC:
        raise ConfigError(f"dataset spec over {MAX_SPEC} characters; {GRAMMAR}")
    kind, colon, rest = spec.partition(":")
    if kind in ("jsonl", "sharegpt") and colon:
        return _file(spec, kind, rest, workload)
    if kind not in _KEYS or not colon:
        raise _fail(spec, f"unknown kind {kind!r}")
    o = _options(spec, kind, rest)
    output = _lengths(spec, o, "output", 1)
    if kind == "synthetic":
        return Synthetic(_lengths(spec, o, "input", MIN_INPUT), output, seed, corpus)
    if kind == "prefix":
        prefix, suffix = o["prefix"][0], o["suffix"][0]
        if prefix + suffix > MAX_TOKENS:
            raise _fail(spec, f"prefix + suffix must be at most {MAX_TOKENS} tokens")
        if (total := o["per_group"][0] * (prefix + suffix)) > MAX_CHAIN_TOKENS:
            raise _fail(
                spec, f"per_group x (prefix + suffix) is {total} tokens, over the {MAX_CHAIN_TOKENS} a group may send"
            )
        return SharedPrefix(prefix, suffix, o["per_group"][0], output, seed, corpus)
    turns, inputs = o["turns"][0], _lengths(spec, o, "input", MIN_INPUT)
    if turns * inputs.top + (turns - 1) * output.top > MAX_TOKENS:
        raise _fail(spec, f"the last turn would send turns x input + (turns - 1) x output, over {MAX_TOKENS} tokens")
    total = inputs.top * turns * (turns + 1) // 2 + output.top * turns * (turns - 1) // 2
    if total > MAX_CHAIN_TOKENS:
        raise _fail(
            spec, f"the chat's turns would send {total} tokens in all, over the {MAX_CHAIN_TOKENS} a chat may send"
        )
    return MultiTurn(turns, inputs, output, seed, corpus)
