"""Prompts: each request's fresh prompt for a workload, built from long-form text and a task.

A prompt is one user message: a nonce line, then documents (or the first part of one) from a corpus, then
the task, then the correctness canary's instruction (prompts/canary.py: begin the answer with a line made
from the nonce), always the last line. The nonce is 16 random hex digits drawn from the seed and the
workload, so two prompts have in common only the nonce digits they share at the start: fewer than 4
characters but for 1 pair in 65,536, far below any prefix cache's block. Which documents, in what order, the
task and (translate) the language all follow the seed too, and the same seed always builds the same prompt.
Its size is the o200k_base token count of the message text (not the chat template's tokens, not the image),
within 2% of the workload's target.

A paired workload's two turns share everything but the task at the end: the same nonce and documents,
sized for the longer of the two tasks, so the second turn repeats the first one's prefix to the character.

Given a ``nonce_seed`` as well, the nonce is drawn from it alone and everything else from the seed: prompts
built from one seed and different nonce seeds differ only in their first line (:func:`without_nonce` is the
rest), which is how a scheduled round sends one prompt to every endpoint of a model (schedule/rounds.py). Such
a prompt is sized with the seed's own nonce, whose digits its own then replace: its size may differ from the
seed's by the few tokens the two numbers' digits take apart.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tokenpace.config.workloads import IMAGE_TASK, Workload
from tokenpace.errors import ConfigError
from tokenpace.prompts import canary
from tokenpace.prompts.corpus import Corpus, Document, default_corpus, head, token_length
from tokenpace.prompts.image import bar_chart
from tokenpace.prompts.tokens import count_tokens

TOLERANCE = 0.02  # a prompt's size is within 2% of its workload's target
_NONCE_LINE = re.compile(r"[0-9a-f]{16} [^\n]*\n")  # a fresh prompt's first line (see _build)
_MIN_ROOM = 40  # tokens worth starting another section for: its heading and a sentence or two
LANGUAGES = (
    *("French", "German", "Spanish", "Italian", "Portuguese", "Dutch", "Polish", "Russian", "Turkish"),
    *("Japanese", "Korean", "Simplified Chinese"),
)

# Each task asks for more than max_tokens, so every answer runs to the cap and output speed is measured over
# a full-length stream: {words} is the workload's max_tokens as words, ~1.3 times what the cap lets through
# (English runs ~0.75 words an o200k token; other languages and code take more tokens a word). {a} and {b} are
# the first two documents' titles; {questions}: words / 50, at least 30.
# No task asks for the documents back (issue 31): a faithful answer copies little of its prompt, so a provider
# drafting tokens from the prompt (measure/copying.py) gains no speed here that other prompts would not give it.
# summarize explains in the model's own words, questions are answered without quoting, and translate leaves the
# code blocks and grammar rules (much of CPython's reference) out rather than copying them unchanged.
_TASKS = {
    "summarize": "Explain the documents above in your own words to a developer who has not read them. Cover "
    "each document in turn, in full paragraphs; do not quote them or copy their code or grammar rules (where an "
    "example helps, write a new one of your own), and write at least {words} words.",
    "questions": "Write at least {questions} numbered questions that test a careful reading of the documents "
    "above. Follow each with a two- or three-sentence answer in your own words, without quoting, that names the "
    "document it comes from. Write at least {words} words in all.",
    "compare": 'Write a comparative analysis of "{a}" and "{b}" (and of any other document above): what each '
    "covers, where they overlap, where they differ and how they depend on each other. Write at least {words} "
    "words in full paragraphs.",
    "translate": 'Translate the prose of the documents above into {language}, starting with "{a}" and going on '
    "in order, in full without summarizing. Leave code blocks and grammar rules out: in the place of each, say in "
    "one {language} sentence what it shows. Write at least {words} words of translation.",
    "visual": "Create a visual artifact from the documents above: one self-contained HTML page with an inline "
    "SVG chart or diagram that presents at least 12 facts, names or figures from the text, with labels, a "
    "legend and a caption. Output the complete code, then explain in at least {words} words what it shows.",
    IMAGE_TASK: "The attached image is a chart. Describe the chart, then list every bar's label and value "
    "exactly as shown, then give the total, the largest and the smallest value, then write at least {words} "
    "words on what the chart suggests and how it could present its data better. The documents above are "
    "background.",
}


def asked_words(max_tokens: int) -> int:
    """Words a task asks for = max_tokens (more than max_tokens tokens hold, at ~0.75 words a token)."""
    return max_tokens


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    text: str
    images: tuple[bytes, ...] = ()  # PNG bytes, sent as data URIs


@dataclass(frozen=True, slots=True)
class Prompt:
    """A chat prompt ready to send, with its measured size: samples say what they ran."""

    messages: tuple[Message, ...]
    max_tokens: int
    input_tokens: int  # o200k_base tokens of all message text; images and chat-template tokens not counted
    fingerprint: str  # first 16 hex digits of the sha256 of the message text, then the image bytes
    task: str = ""
    image_bytes: int = 0
    image_pixels: int = 0
    canary: str | None = None  # the line the answer must begin with (prompts/canary.py); None: none asked

    @property
    def text(self) -> str:
        """Its messages' text, a blank line between two: what ``--keep-prompts`` stores, what answers may copy."""
        return "\n\n".join(m.text for m in self.messages)


def chat_prompt(messages: Sequence[Message], max_tokens: int, tokens: Sequence[int] | None = None) -> Prompt:
    """A text prompt of ``messages``: input_tokens = sum of each message's o200k count (``tokens`` when known).

    The fingerprint hashes the messages' text in order, as ``build_prompt`` hashes its one message.
    """
    counts = [count_tokens(m.text) for m in messages] if tokens is None else tokens
    digest = hashlib.sha256()
    for m in messages:
        digest.update(m.text.encode())
    return Prompt(tuple(messages), max_tokens, sum(counts), digest.hexdigest()[:16])


def build_prompt(workload: Workload, seed: int, corpus: Corpus | None = None) -> Prompt:
    """The prompt of request ``seed`` (corpus None: CPython's reference topics); of a paired workload, its first
    turn's."""
    return build_turns(workload, seed, corpus)[0]


def build_turns(
    workload: Workload, seed: int, corpus: Corpus | None = None, nonce_seed: int | None = None
) -> tuple[Prompt, ...]:
    """The prompts of request ``seed``: one, or a paired workload's two turns, each ending with one of two distinct
    tasks drawn, their shared prefix built once; the nonce drawn from ``nonce_seed`` when given, else from ``seed``."""
    rng = random.Random(f"{workload.name}/{workload.input_tokens}/{seed}")
    nonce = None if nonce_seed is None else random.Random(f"nonce/{workload.name}/{nonce_seed}")
    corpus = default_corpus() if corpus is None else corpus
    if not workload.paired:
        return _build(workload, (rng.choice(workload.tasks),), rng, corpus, nonce)
    return _build(workload, tuple(rng.sample(sorted(set(workload.tasks)), 2)), rng, corpus, nonce)


def without_nonce(text: str) -> str:
    """A fresh prompt's text after its nonce line: what the prompts of one round share (other text as it is)."""
    found = _NONCE_LINE.match(text)
    return text if found is None else text[found.end() :]


def _shuffled(corpus: Corpus, rng: random.Random) -> Iterator[Document]:
    """The corpus in a seeded order, then again in a new order when a prompt needs more than the corpus holds."""
    order = list(corpus)
    while True:
        rng.shuffle(order)
        yield from order


def _sections(docs: Iterator[Document], budget: int, cap: int, slack: int) -> list[str]:
    """Document sections of about ``budget`` tokens in all, none over ``cap`` unless it is the last.

    A document that fits is taken whole, unless what it would leave is too little for another section's
    heading and some text: then it is cut to leave enough. The last section is cut to fill the budget.
    """
    out: list[str] = []
    for doc in docs:
        heading = f"### Document {len(out) + 1}: {doc.title}\n\n"
        room = budget - count_tokens(heading) - 1  # 1: the blank line after the section
        if room <= 0:
            break
        n = token_length(doc.text)
        take = min(n, cap, room)
        short = _MIN_ROOM - (room - take)
        if 0 < short < _MIN_ROOM:
            take = room if n >= room else take - short if take > short else take
        last = take == room
        # The last cut may move back up to ``slack`` tokens to end a sentence: aim half of that past the budget.
        text, used = head(doc.text, min(n, room + slack // 2) if last else take, slack)
        out.append(heading + text + "\n\n")
        if last:
            break
        budget = room - used
    return out


def _build(
    w: Workload, tasks: tuple[str, ...], rng: random.Random, corpus: Corpus, nonce_rng: random.Random | None
) -> tuple[Prompt, ...]:
    """One prompt per task of ``tasks``: nonce line + document sections + the task's instruction + canary
    instruction, sized to ``w.input_tokens`` and leaving room for the longest of ``tasks`` (the sections, built once,
    are the same whichever task ends the prompt); an image if ``w`` has one. The nonce from ``nonce_rng`` if given."""
    if not corpus:
        raise ConfigError("the corpus holds no documents")
    if "compare" in tasks and len(corpus) < 2:
        raise ConfigError(f"workload {w.name}: the compare task needs a corpus of at least 2 documents")
    nonce = f"{rng.getrandbits(64):016x}"  # drawn either way: the prompt is sized with it (see below)
    order = rng.getrandbits(64)
    a, b, *_ = itertools.islice(_shuffled(corpus, random.Random(order)), 2)
    words = asked_words(w.max_tokens)
    language = rng.choice(LANGUAGES)
    instructions = [
        _TASKS[t].format(a=a.title, b=b.title, language=language, words=f"{words:,}", questions=max(30, words // 50))
        + "\n\n"
        + canary.INSTRUCTION  # last, so the answer's first line is the canary's
        for t in tasks
    ]
    first = f"{nonce} is this request's reference number; it is not part of the task.\n\nDocuments:\n\n"
    longest = max(instructions, key=count_tokens)
    fixed = count_tokens(first) + count_tokens(longest)

    def text(budget: int) -> str:
        """The prompt up to its task: the same for every one of ``tasks``."""
        cap = budget // 2 if "compare" in tasks else budget  # compare: at least two documents
        docs = _shuffled(corpus, random.Random(order))
        return first + "".join(_sections(docs, budget, cap, slack=w.input_tokens // 100))

    # Sections are sized by their own token counts; where many short ones drift from the exact count of the
    # whole (tokens merge across joins), a second pass corrects the budget by the difference (and is kept if closer).
    # Sized with the longest task, so a pair's turns choose the same sections.
    budget = w.input_tokens - fixed
    head_text = text(budget)
    size = count_tokens(head_text + longest)
    if abs(size - w.input_tokens) > w.input_tokens * TOLERANCE / 4:
        again = text(budget + w.input_tokens - size)
        sized = (head_text, size), (again, count_tokens(again + longest))
        head_text, size = min(sized, key=lambda t: abs(t[1] - w.input_tokens))
    images = () if w.image is None else (bar_chart(rng.getrandbits(64), w.image).png,)
    known: int | None = size
    if nonce_rng is not None:  # sized with the seed's nonce, so the sections are the seed's: only the digits change
        nonce, known = f"{nonce_rng.getrandbits(64):016x}", None  # their tokens may not: counted again
        head_text = nonce + head_text[len(nonce) :]
    return tuple(
        _prompt(w, task, head_text + instruction, known if instruction == longest else None, images, nonce)
        for task, instruction in zip(tasks, instructions, strict=True)
    )


def _prompt(w: Workload, task: str, body: str, size: int | None, images: tuple[bytes, ...], nonce: str) -> Prompt:
    """The one-message prompt of ``body`` (``size``: its token count when known), fingerprinted with its images."""
    digest = hashlib.sha256(body.encode())
    for png in images:
        digest.update(png)
    return Prompt(
        messages=(Message("user", body, images),),
        max_tokens=w.max_tokens,
        input_tokens=count_tokens(body) if size is None else size,
        fingerprint=digest.hexdigest()[:16],
        task=task,
        image_bytes=sum(len(png) for png in images),
        image_pixels=0 if w.image is None else w.image[0] * w.image[1],
        canary=canary.expected(nonce),
    )
