"""pii against presidio-analyzer's pattern recognizers, on presidio-evaluator's
generated, labelled sentences, in one Python process.

The sentences: `PresidioSentenceFaker(locale="en_US", lower_case_ratio=0.0,
random_seed=SEED)`, SENTENCES of them (10,000 and 42 unless given); the entities both sides detect by pattern
(e-mail, phone, card, IBAN, US SSN, IP address) are scored, span by span: a
finding is right when it overlaps a labelled span of its entity, a labelled
span is found when a finding of its entity overlaps it.

presidio: its predefined recognizers for those entities, each asked with no
NLP artifacts (no spaCy model: pattern, checksum and phonenumbers only), the
results de-duplicated as its AnalyzerEngine does, every score kept (its
default threshold is 0). pii: the guard as `cargo demo` builds it
(target/demo/plugins/pii.wasm), no settings, through hookbox's Python binding,
each sentence a `tool_result` of one warm run; where it answers `replace`,
its labels are read back into spans.

    pip install presidio-evaluator==0.3.2 presidio-analyzer==2.2.366 ./host/python
    cargo demo
    python3 bench/pii/compare.py [SENTENCES [SEED]]

Prints the table BENCHMARKS.md holds, and exits 1 when pii's precision or
recall is under presidio's for an entity, or it is not 5x faster per MiB."""

import logging
import re
import sys
import tempfile
import time
import shutil
from collections import defaultdict
from pathlib import Path

import hookbox
from presidio_analyzer import EntityRecognizer
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    IpRecognizer,
    PhoneRecognizer,
    UsSsnRecognizer,
)
from presidio_evaluator.data_generator import PresidioSentenceFaker

ENTITIES = {
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "CREDIT_CARD": "CARD",
    "IBAN_CODE": "IBAN",
    "US_SSN": "NATIONAL ID",
    "IP_ADDRESS": "IP",
}
LABEL = re.compile(r"\[REDACTED (EMAIL|PHONE|CARD|IBAN|NATIONAL ID|IP)\]")
BY_LABEL = {label: entity for entity, label in ENTITIES.items()}


def sentences(n: int, seed: int):
    faker = PresidioSentenceFaker(locale="en_US", lower_case_ratio=0.0, random_seed=seed)
    out = []
    for s in faker.generate_new_fake_sentences(num_samples=n):
        gold = [(sp.entity_type, sp.start_position, sp.end_position) for sp in s.spans if sp.entity_type in ENTITIES]
        out.append((s.full_text, gold))
    return out


def presidio(texts):
    recognizers = [
        EmailRecognizer(),
        PhoneRecognizer(),
        CreditCardRecognizer(),
        IbanRecognizer(),
        UsSsnRecognizer(),
        IpRecognizer(),
    ]
    found = []
    started = time.perf_counter()
    for text in texts:
        results = []
        for r in recognizers:
            results.extend(r.analyze(text, entities=r.supported_entities, nlp_artifacts=None))
        results = EntityRecognizer.remove_duplicates(results)
        found.append([(r.entity_type, r.start, r.end) for r in results])
    return found, time.perf_counter() - started


def spans_of(text: str, redacted: str):
    """Where the labels of `redacted` stand in `text`: the text between them
    is the same, so the redacted text is a pattern the original matches."""
    parts = LABEL.split(redacted)
    pattern = "".join(re.escape(p) if i % 2 == 0 else "(.+?)" for i, p in enumerate(parts))
    match = re.fullmatch(pattern, text, re.S)
    assert match, (text, redacted)
    labels = parts[1::2]
    return [(BY_LABEL[label], match.start(i + 1), match.end(i + 1)) for i, label in enumerate(labels)]


def pii(texts, wasm: Path):
    with tempfile.TemporaryDirectory() as plugins:
        shutil.copy(wasm, Path(plugins) / "pii.wasm")
        stack = hookbox.Stack.from_files([str(Path(plugins) / "pii.wasm")])
        run = stack.start_run()
        verdicts = []
        started = time.perf_counter()
        for text in texts:
            verdicts.append(run.tool_result("read_file", {"path": "notes.txt"}, text))
        elapsed = time.perf_counter() - started
    found = []
    for text, verdict in zip(texts, verdicts):
        found.append(spans_of(text, verdict.text) if verdict.kind == "replace" else [])
    return found, elapsed


def score(gold, found):
    """Per entity: (findings right, findings), (labelled found, labelled)."""
    right, total = defaultdict(int), defaultdict(int)
    hit, labelled = defaultdict(int), defaultdict(int)
    overlap = lambda a, b: a[1] < b[2] and b[1] < a[2]
    for g, f in zip(gold, found):
        for x in f:
            if x[0] in ENTITIES:
                total[x[0]] += 1
                right[x[0]] += any(y[0] == x[0] and overlap(x, y) for y in g)
        for y in g:
            labelled[y[0]] += 1
            hit[y[0]] += any(x[0] == y[0] and overlap(x, y) for x in f)
    return {
        e: (right[e] / total[e] if total[e] else 1.0, hit[e] / labelled[e] if labelled[e] else 1.0, total[e], labelled[e])
        for e in ENTITIES
    }


def main() -> int:
    # tldextract (presidio's e-mail check) falls back to its own copy of the
    # public suffix list when it cannot fetch one; quietly.
    logging.getLogger("tldextract").setLevel(logging.CRITICAL)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 42
    root = Path(__file__).resolve().parents[2]
    data = sentences(n, seed)
    texts = [t for t, _ in data]
    gold = [g for _, g in data]
    mib = sum(len(t.encode()) for t in texts) / 2**20
    theirs, their_time = presidio(texts)
    ours, our_time = pii(texts, root / "target/demo/plugins/pii.wasm")
    a, b = score(gold, ours), score(gold, theirs)
    print(f"{n} sentences, {mib:.2f} MiB, seed {seed}\n")
    print("| entity | labelled | pii precision | pii recall | presidio precision | presidio recall |")
    print("|---|---|---|---|---|---|")
    short = []
    for e in ENTITIES:
        pp, pr, _, labelled = a[e]
        qp, qr, _, _ = b[e]
        print(f"| {e} | {labelled} | {pp:.1%} | {pr:.1%} | {qp:.1%} | {qr:.1%} |")
        if pp < qp or pr < qr:
            short.append(e)
    ours_rate, theirs_rate = mib / our_time, mib / their_time
    print(f"\n| | per MiB | MiB/s |\n|---|---|---|")
    print(f"| pii (hookbox, Python binding) | {our_time / mib * 1000:.0f} ms | {ours_rate:.2f} |")
    print(f"| presidio pattern recognizers | {their_time / mib * 1000:.0f} ms | {theirs_rate:.2f} |")
    print(f"\npii is {ours_rate / theirs_rate:.1f}x faster per MiB")
    if short:
        print("under presidio on:", ", ".join(short), file=sys.stderr)
    if ours_rate < 5 * theirs_rate:
        print("not 5x faster per MiB", file=sys.stderr)
    return 1 if short or ours_rate < 5 * theirs_rate else 0


if __name__ == "__main__":
    sys.exit(main())
