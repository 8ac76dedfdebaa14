#!/usr/bin/env python3
"""Generate the built-in sentiment dataset of the examples (package models/bert/sample, used by `make run`).

Writes models/bert/sample/sample.pos and sample.neg: one lower-case movie-review
sentence per line, made from this project's own templates and word lists (no external data).
The two classes use different opinion words, so even a tiny randomly initialised BERT learns
them within a minute; a few sentences per class use negation ("not bad at all") so the task
is not pure keyword spotting. Output is deterministic (fixed seed), without duplicates and
without sentences shared by both classes.

Then regenerate the tiny model's vocabulary:
    go run scripts/make_sample_vocab.go

Usage: python3 scripts/make_sample_data.py [PER_CLASS]   (default 400)
"""

import os
import random
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(REPO, "models", "bert", "sample")
PER_CLASS = int(sys.argv[1]) if len(sys.argv) > 1 else 400

SUBJECTS = [
    "the movie", "this film", "the story", "the plot", "the acting", "the script", "the ending",
    "the soundtrack", "the cast", "the dialogue", "the direction", "the cinematography",
    "the lead performance", "the second half", "the opening scene", "this sequel", "the comedy",
    "the documentary", "the animation", "the pacing", "the screenplay", "the final act",
    "the villain", "the romance", "the thriller", "the drama", "every scene", "the editing",
]

POS_ADJ = [
    "wonderful", "brilliant", "delightful", "moving", "charming", "gripping", "beautiful",
    "clever", "hilarious", "superb", "touching", "stunning", "excellent", "thrilling",
    "heartfelt", "masterful", "inventive", "joyful", "powerful", "witty", "fresh", "memorable",
]
NEG_ADJ = [
    "boring", "dull", "awful", "clumsy", "tedious", "predictable", "terrible", "lifeless",
    "messy", "painful", "bland", "forgettable", "shallow", "confusing", "lazy", "pointless",
    "tiresome", "flat", "dreadful", "sloppy", "stale", "annoying",
]

POS_VERB = ["loved", "enjoyed", "adored", "admired", "savored", "treasured"]
NEG_VERB = ["hated", "regretted", "disliked", "endured", "resented", "despised"]

POS_END = [
    "i would happily watch it again", "a real treat from start to finish", "worth every minute",
    "the audience cheered at the end", "a small masterpiece", "it left me smiling for days",
    "highly recommended", "a joy to watch", "it deserves every award", "pure pleasure",
]
NEG_END = [
    "i want those two hours back", "a chore from start to finish", "not worth a single minute",
    "half the audience walked out", "a complete mess", "it left me angry for days",
    "avoid it at all costs", "a pain to sit through", "it deserves to be forgotten", "pure frustration",
]

INTENSIFIERS = ["", "", "truly ", "really ", "simply ", "absolutely ", "quite ", "so "]

# Negated opinion words flip the class: "not boring at all" is positive.
POS_NEGATED = ["not boring at all", "never dull for a moment", "anything but predictable", "far from forgettable"]
NEG_NEGATED = ["not funny at all", "never exciting for a moment", "anything but clever", "far from memorable"]


def sentence(rng, adj, verb, end, negated):
    subj = rng.choice(SUBJECTS)
    template = rng.randrange(8)
    if template == 0:
        return f"{subj} is {rng.choice(INTENSIFIERS)}{rng.choice(adj)} ."
    if template == 1:
        return f"{subj} was {rng.choice(INTENSIFIERS)}{rng.choice(adj)} and {rng.choice(adj)} ."
    if template == 2:
        return f"i {rng.choice(verb)} {subj} , {rng.choice(end)} ."
    if template == 3:
        return f"{rng.choice(adj)} , {rng.choice(adj)} and {rng.choice(INTENSIFIERS)}{rng.choice(adj)} : {rng.choice(end)} ."
    if template == 4:
        return f"what a {rng.choice(adj)} experience , {subj} felt {rng.choice(adj)} ."
    if template == 5:
        return f"{subj} is {rng.choice(negated)} , {rng.choice(end)} ."
    if template == 6:
        return f"we {rng.choice(verb)} {subj} ; it was {rng.choice(INTENSIFIERS)}{rng.choice(adj)} ."
    return f"{rng.choice(end)} : {subj} is {rng.choice(adj)} ."


def generate(rng, adj, verb, end, negated, n):
    out, seen = [], set()
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 100 * n:
            raise SystemExit(f"could not make {n} distinct sentences")
        s = " ".join(sentence(rng, adj, verb, end, negated).split())
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def main():
    rng = random.Random(20240611)
    pos = generate(rng, POS_ADJ, POS_VERB, POS_END, POS_NEGATED, PER_CLASS)
    neg = generate(rng, NEG_ADJ, NEG_VERB, NEG_END, NEG_NEGATED, PER_CLASS)
    shared = set(pos) & set(neg)
    if shared:
        raise SystemExit(f"sentences in both classes: {sorted(shared)[:3]}")
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, lines in (("sample.pos", pos), ("sample.neg", neg)):
        path = os.path.join(OUT_DIR, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        print(f"wrote {path}: {len(lines)} lines")


if __name__ == "__main__":
    main()
