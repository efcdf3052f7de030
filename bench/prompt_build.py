"""What building prompts costs, per built-in workload: prompts are built before the clock starts, but a run
builds one per request, so a 100k-token prompt must still take well under a second.

Reported apart: loading the vocabulary and the default corpus and tokenizing the corpus (each once per process),
then per workload the first prompt (Pillow's font is loaded by the first chart) and the median and maximum of
later prompts (new seeds: other documents, other order).

    uv run python bench/prompt_build.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

from tokenpace.config.workloads import BUILTIN
from tokenpace.prompts.corpus import default_corpus, token_length
from tokenpace.prompts.prompt import build_prompt
from tokenpace.prompts.tokens import preload


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=7, help="later prompts timed per workload (median shown)")
    args = parser.parse_args()

    t0 = time.perf_counter()
    preload()
    t1 = time.perf_counter()
    corpus = default_corpus()
    t2 = time.perf_counter()
    tokens = sum(token_length(doc.text) for doc in corpus)
    t3 = time.perf_counter()
    print(f"o200k_base vocabulary load: {ms(t1 - t0)} ms")
    print(f"default corpus load:        {ms(t2 - t1)} ms ({len(corpus)} documents)")
    print(f"default corpus tokenizing:  {ms(t3 - t2)} ms ({tokens:,} tokens)")
    print()
    head = ("workload", "first ms", "median ms", "max ms", "tokens", "target", "image KB")
    print(f"{head[0]:<10} " + " ".join(f"{h:>9}" for h in head[1:]))
    for name, workload in BUILTIN.items():
        t0 = time.perf_counter()
        prompt = build_prompt(workload, 0)
        first = time.perf_counter() - t0
        times = []
        for seed in range(1, args.repeat + 1):
            t0 = time.perf_counter()
            build_prompt(workload, seed)
            times.append(time.perf_counter() - t0)
        kb = f"{prompt.image_bytes / 1024:.1f}" if prompt.image_bytes else "-"
        cells = (ms(first), ms(statistics.median(times)), ms(max(times)), f"{prompt.input_tokens:,}")
        print(f"{name:<10} " + " ".join(f"{c:>9}" for c in (*cells, f"{workload.input_tokens:,}", kb)))


if __name__ == "__main__":
    main()
