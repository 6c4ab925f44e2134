"""Write data/smoke/: the project's own small datasets, in the file layouts of the external ones.

The smoke profile (params/smoke.yaml) reads its data from here, so a fresh clone runs every notebook
and test with no external data beside it. Every sentence is composed below from short hand-written
word lists and templates; nothing is taken from MRPC, STS-B, SciFact, NFCorpus, SugarCrepe or
CondaQA, whose licences do not allow copying. Only their FILE LAYOUTS are reproduced (the ones
compsense.data.datasets reads), so the same loaders and notebooks run on both.

    python scripts/make_smoke_data.py              # rewrites data/smoke/
    python scripts/make_smoke_data.py --out /tmp/x # somewhere else (tests/test_smoke_data.py does this)

Deterministic: one seeded random.Random per dataset, lists only (no set iteration order), fixed
float formatting and "\\n" line ends, so a re-run reproduces the committed files byte for byte
(a test checks it). After changing this script, re-run it and commit data/smoke/ with it.

What is in it (sizes are chosen so every smoke notebook has enough rows, and the whole stays small):
- mrpc/: paraphrase pairs (label 1) and pairs that differ in one detail (label 0) in MRPC's TSV
  layout, GLUE's dev ids in dev_ids.tsv. The sentences hold what compsense.data.negatives edits:
  negations to add and to remove, asymmetric verbs with two people (role swaps), two coloured
  objects (attribute swaps), left/right, above/below, before/after, numbers, more/less.
- stsb/: sentence pairs with 0-5 similarity scores in the STS Benchmark layout.
- nfcorpus/: a BEIR folder (corpus, queries, qrels train/dev/test over one corpus) about foods and
  health markers: the smoke profile's retrieval training source and in-domain test.
- scifact/: a BEIR folder of claims and short abstracts about plants and animals under
  environmental stress: the zero-shot test; no text is shared with nfcorpus/.
- sugarcrepe/: caption / negative-caption pairs for the seven SugarCrepe edit types; several
  captions describe each (imaginary) image, as the near-miss protocol needs.
- condaqa/: passages around one negated sentence with their edits (paraphrase, scope, negation
  undone) and a question, in CondaQA's JSON-lines layout.
Folders of fixed releases (mrpc, stsb, sugarcrepe) hold a SUBSET file: compsense.data.datasets then accepts
a record count other than the release's (with a warning).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

SEED = 20261201
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "data" / "smoke"

# --- word lists -------------------------------------------------------------------------------

PEOPLE = [
    "teacher",
    "doctor",
    "farmer",
    "pilot",
    "student",
    "engineer",
    "nurse",
    "baker",
    "lawyer",
    "painter",
    "driver",
    "manager",
    "captain",
    "singer",
    "coach",
    "writer",
    "guard",
    "chef",
    "tailor",
    "clerk",
    "miner",
    "sailor",
    "banker",
    "judge",
]
# (base, past, past participle): asymmetric verbs, so swapping who did what changes the meaning.
VERBS = [
    ("help", "helped", "helped"),
    ("visit", "visited", "visited"),
    ("follow", "followed", "followed"),
    ("thank", "thanked", "thanked"),
    ("warn", "warned", "warned"),
    ("praise", "praised", "praised"),
    ("invite", "invited", "invited"),
    ("interview", "interviewed", "interviewed"),
    ("trust", "trusted", "trusted"),
    ("pay", "paid", "paid"),
    ("hire", "hired", "hired"),
    ("teach", "taught", "taught"),
    ("watch", "watched", "watched"),
    ("support", "supported", "supported"),
    ("chase", "chased", "chased"),
    ("blame", "blamed", "blamed"),
    ("train", "trained", "trained"),
    ("rescue", "rescued", "rescued"),
]
# Reporting verbs of the same meaning, for paraphrases of the active sentences.
SYNONYMS = {
    "help": "assist",
    "visit": "call on",
    "thank": "express thanks to",
    "warn": "caution",
    "praise": "commend",
    "hire": "employ",
    "watch": "observe",
    "support": "back",
    "blame": "hold responsible",
    "rescue": "save",
}
PLACES = [
    "station",
    "library",
    "market",
    "harbour",
    "museum",
    "garden",
    "bakery",
    "hospital",
    "school",
    "bridge",
    "village hall",
    "clinic",
    "office",
    "theatre",
    "stadium",
    "airport",
    "farm",
    "factory",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
TIMES = ["in the morning", "after lunch", "at noon", "in the evening", "before dawn", "late at night"]
OBJECTS = [
    "box",
    "lamp",
    "chair",
    "book",
    "bottle",
    "basket",
    "clock",
    "vase",
    "bag",
    "mirror",
    "kettle",
    "bowl",
    "ladder",
    "drum",
    "candle",
    "plate",
    "jar",
    "stool",
]
COLOURS = ["red", "blue", "green", "yellow", "black", "white", "brown", "grey", "orange", "purple"]
MATERIALS = ["wooden", "metal", "glass", "plastic", "paper", "leather"]
SIDES = ["to the left of", "to the right of"]
LEVELS = ["above", "below"]
COUNTED = ["boxes", "letters", "tickets", "chairs", "apples", "lamps", "books", "parcels", "coins", "bottles"]
NUMBERS = [3, 4, 5, 6, 7, 8, 9, 12, 15, 18, 20, 24, 30, 36, 40, 45, 50, 60]
ROOMS = ["kitchen", "hallway", "classroom", "garage", "bedroom", "workshop", "office", "porch", "attic"]
RELATIONS = ["on", "under", "next to", "behind", "in front of", "beside"]

FOODS = [
    "oats",
    "lentils",
    "walnuts",
    "blueberries",
    "spinach",
    "salmon",
    "green tea",
    "soy milk",
    "brown rice",
    "kale",
    "chickpeas",
    "flaxseed",
    "broccoli",
    "apples",
    "barley",
    "almonds",
    "tomatoes",
    "garlic",
    "yogurt",
    "beans",
]
MARKERS = [
    "blood pressure",
    "cholesterol",
    "blood sugar",
    "inflammation",
    "bone density",
    "sleep quality",
    "liver fat",
    "kidney function",
    "resting heart rate",
    "body weight",
]
GROUPS = [
    "older adults",
    "young women",
    "office workers",
    "athletes",
    "children",
    "pregnant women",
    "people with diabetes",
    "smokers",
    "students",
    "retired men",
]
DESIGNS = ["a randomised trial", "a cohort study", "a crossover trial", "a pilot study", "a case-control study"]

FACTORS = [
    "warmer water",
    "higher salinity",
    "deep shade",
    "nitrogen fertiliser",
    "summer drought",
    "soil compaction",
    "night lighting",
    "road noise",
    "microplastic fibres",
    "acidic rain",
]
# Organisms with the outcomes that can be measured on them.
ORGANISMS = {
    "plant": (
        ["wheat seedlings", "sea grass", "oak saplings", "sunflowers", "marsh reeds"],
        ["growth rate", "root length", "seed germination", "leaf area", "flowering time"],
    ),
    "animal": (
        ["river trout", "honeybees", "tree frogs", "songbirds", "field mice", "pond snails"],
        ["growth rate", "egg production", "body size", "survival", "foraging time"],
    ),
}

BUILDINGS = [
    "mill",
    "chapel",
    "lighthouse",
    "school",
    "bridge",
    "market hall",
    "railway station",
    "library",
    "theatre",
    "harbour wall",
    "water tower",
    "town hall",
]
TOWNS = [
    "Ashford",
    "Brinley",
    "Carrow",
    "Dunmere",
    "Eskdale",
    "Fenwick",
    "Galloway",
    "Hollins",
    "Irvale",
    "Kestrel",
    "Lindham",
    "Marsh End",
    "Northope",
    "Oakridge",
    "Pellow",
    "Quarry Bank",
    "Redmoor",
    "Stanway",
    "Thornby",
    "Upwell",
]
USES = ["a museum", "a youth club", "a cafe", "a community centre", "an art gallery", "a concert hall"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="folder to (re)write (default data/smoke)")
    args = parser.parse_args(argv)
    files = write_all(Path(args.out))
    total = sum(p.stat().st_size for p in files)
    print(f"wrote {len(files)} files, {total:,} bytes, to {args.out}")
    return 0


def write_all(out: Path) -> list[Path]:
    """Every smoke dataset under `out` (its dataset folders are replaced); the files written."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("mrpc", "stsb", "nfcorpus", "scifact", "sugarcrepe", "condaqa"):
        if (out / name).exists():
            shutil.rmtree(out / name)
    files: dict[str, str] = {"README.md": README}
    files.update(mrpc_files(random.Random(SEED)))
    files.update(stsb_files(random.Random(SEED + 1)))
    files.update(nfcorpus_files(random.Random(SEED + 2)))
    files.update(scifact_files(random.Random(SEED + 3)))
    files.update(sugarcrepe_files(random.Random(SEED + 4)))
    files.update(condaqa_files(random.Random(SEED + 5)))
    written = []
    for rel in sorted(files):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[rel].encode("utf-8"))
        written.append(path)
    return written


README = """\
# data/smoke: the project's own smoke data

Written by `scripts/make_smoke_data.py` (deterministic; re-run it after changing it, and commit
both). Every sentence was composed by that script from its own word lists and templates: nothing
here comes from the external datasets whose file layouts these folders copy, so the smoke profile
(`params/smoke.yaml`, `data_dir: data/smoke`) and `make test` run in a fresh clone.
The numbers a smoke run prints test the code, not the science. Licence: the project's (LICENSE).
`data/MANIFEST.json` lists the external datasets the local and paper profiles read instead.
"""
SUBSET = "A deliberate sample written for the smoke profile by scripts/make_smoke_data.py, not the release.\n"


# --- sentences --------------------------------------------------------------------------------


def cap(text: str) -> str:
    return text[0].upper() + text[1:]


def the(noun: str) -> str:
    return f"the {noun}"


def article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


class Unique:
    """Draws until a value not drawn before comes out (keeps train, test and every pair distinct)."""

    def __init__(self, rng: random.Random):
        self.rng, self.seen = rng, set()

    def draw(self, make, tries: int = 200):
        for _ in range(tries):
            value = make(self.rng)
            key = value if isinstance(value, str) else json.dumps(value)
            if key not in self.seen:
                self.seen.add(key)
                return value
        raise RuntimeError("word lists too small for the number of records asked for")


def two(rng: random.Random, items: list) -> tuple:
    a, b = rng.sample(items, 2)
    return a, b


def sentence_pair(rng: random.Random, paraphrase: bool) -> tuple[str, str, str]:
    """(kind, sentence, partner): a paraphrase of the sentence, or a sentence that differs in one detail."""
    kind = rng.choice(
        ["active", "negated", "never", "always", "side", "level", "attribute", "count", "order", "closed", "more"]
    )
    p1, p2 = two(rng, PEOPLE)
    base, past, part = rng.choice(VERBS)
    place, day, time = rng.choice(PLACES), rng.choice(DAYS), rng.choice(TIMES)
    other_place = rng.choice([p for p in PLACES if p != place])
    other_day = rng.choice([d for d in DAYS if d != day])
    if kind == "active":
        s = f"The {p1} {past} the {p2} at the {place} on {day}."
        if paraphrase:
            t = rng.choice(
                [
                    f"On {day}, the {p1} {past} the {p2} at the {place}.",
                    f"The {p2} was {part} by the {p1} at the {place} on {day}.",
                    f"At the {place} on {day}, the {p1} {past} the {p2}.",
                ]
            )
        else:
            t = f"The {p1} {past} the {p2} at the {other_place} on {day}."
    elif kind == "negated":
        s = f"The {p1} did not {base} the {p2} {time}."
        if paraphrase:
            t = f"{cap(time)}, the {p1} did not {base} the {p2}."
        else:
            t = f"The {p1} did not {base} the {p2} on {other_day}."
    elif kind in ("never", "always"):  # "has never": compsense.data.negatives' binding rule would carry a bare
        # "never" along with the subject ("The doctor watched the singer never")
        s = f"The {p1} has {kind} {part} the {p2} at the {place}."
        if paraphrase:
            t = f"At the {place}, the {p1} has {kind} {part} the {p2}."
        else:
            t = f"The {p1} has {kind} {part} the {p2} at the {other_place}."
    elif kind in ("side", "level"):
        c, o1, o2 = rng.choice(COLOURS), *two(rng, OBJECTS)
        rel = rng.choice(SIDES if kind == "side" else LEVELS)
        s = f"The {p1} put the {c} {o1} {rel} the {o2}."
        if paraphrase:
            t = f"The {p1} placed the {c} {o1} {rel} the {o2}."
        else:
            t = f"The {p1} put the {c} {o1} {rel} the {rng.choice([o for o in OBJECTS if o not in (o1, o2)])}."
    elif kind == "attribute":
        c1, c2 = two(rng, COLOURS)
        o1, o2 = two(rng, OBJECTS)
        s = f"A {c1} {o1} stood next to a {c2} {o2} in the {place}."
        if paraphrase:
            t = f"In the {place}, a {c1} {o1} stood next to a {c2} {o2}."
        else:
            t = f"A {c1} {o1} stood next to a {c2} {o2} in the {other_place}."
    elif kind == "count":
        n, thing = rng.choice(NUMBERS), rng.choice(COUNTED)
        s = f"The {p1} counted {n} {thing} at the {place} on {day}."
        if paraphrase:
            t = f"On {day}, the {p1} counted {n} {thing} at the {place}."
        else:
            t = f"The {p1} counted {rng.choice([m for m in NUMBERS if m != n])} {thing} at the {place} on {day}."
    elif kind == "order":
        s = f"The {p1} left the {place} before the {p2} arrived."
        if paraphrase:
            t = f"Before the {p2} arrived, the {p1} left the {place}."
        else:
            t = f"The {p1} left the {other_place} before the {p2} arrived."
    elif kind == "closed":
        s = f"The {place} was not open on {day}."
        if paraphrase:
            t = f"On {day}, the {place} was not open."
        else:
            t = f"The {place} was not open on {other_day}."
    else:  # more or fewer
        a, b = two(rng, COUNTED)
        more = rng.choice(["more", "fewer"])
        s = f"The {p1} sold {more} {a} than {b} at the {place}."
        if paraphrase:
            t = f"At the {place}, the {p1} sold {more} {a} than {b}."
        else:
            t = f"The {p1} sold {more} {a} than {b} at the {other_place}."
    return kind, s, t


def pairs(rng: random.Random, n: int, positive_share: float, taken: Unique) -> list[tuple[int, str, str]]:
    """n labelled pairs (label, sentence1, sentence2), no sentence repeated anywhere in `taken`."""
    out = []
    while len(out) < n:
        label = int(rng.random() < positive_share)
        _, s, t = sentence_pair(rng, paraphrase=bool(label))
        if s in taken.seen or t in taken.seen or s == t:
            continue
        taken.seen.update((s, t))
        out.append((label, s, t))
    return out


# --- mrpc/ ------------------------------------------------------------------------------------


def mrpc_files(rng: random.Random) -> dict[str, str]:
    taken = Unique(rng)
    header = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    next_id = iter(range(100001, 10**6, 7))

    def table(rows):
        lines, ids = [], []
        for label, s, t in rows:
            id1, id2 = str(next(next_id)), str(next(next_id))
            lines.append(f"{label}\t{id1}\t{id2}\t{s}\t{t}\n")
            ids.append((id1, id2))
        return header + "".join(lines), ids

    train, train_ids = table(pairs(rng, 240, 0.67, taken))
    test, _ = table(pairs(rng, 120, 0.67, taken))
    dev_ids = sorted(rng.sample(train_ids, 24))
    return {
        "mrpc/msr_paraphrase_train.txt": train,
        "mrpc/msr_paraphrase_test.txt": test,
        "mrpc/dev_ids.tsv": "".join(f"{a}\t{b}\n" for a, b in dev_ids),
        "mrpc/SUBSET": SUBSET,
    }


# --- stsb/ ------------------------------------------------------------------------------------


def stsb_files(rng: random.Random) -> dict[str, str]:
    taken = Unique(rng)
    out = {"stsb/SUBSET": SUBSET}
    for split, n, year in (("train", 200, "2024"), ("dev", 40, "2025"), ("test", 40, "2026")):
        lines = []
        for i in range(n):
            roll = rng.random()
            while True:
                if roll < 0.45:  # a paraphrase: 4-5
                    _, s, t = sentence_pair(rng, paraphrase=True)
                    score = rng.uniform(4.0, 5.0)
                elif roll < 0.8:  # one detail differs: 2-3.8
                    _, s, t = sentence_pair(rng, paraphrase=False)
                    score = rng.uniform(2.0, 3.8)
                else:  # unrelated: 0-1.5
                    s, t = sentence_pair(rng, True)[1], sentence_pair(rng, True)[1]
                    score = rng.uniform(0.0, 1.5)
                if s not in taken.seen and t not in taken.seen and s != t:
                    break
            taken.seen.update((s, t))
            genre, file = rng.choice([("main-smoke", "people"), ("main-smoke", "objects"), ("main-smoke", "places")])
            lines.append(f"{genre}\t{file}\t{year}\t{i + 1:04d}\t{score:.3f}\t{s}\t{t}\n")
        out[f"stsb/sts-{split}.tsv"] = "".join(lines)
    return out


# --- BEIR folders -----------------------------------------------------------------------------

QRELS_HEADER = "query-id\tcorpus-id\tscore\n"


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def qrels(rows: list[tuple[str, str, int]]) -> str:
    return QRELS_HEADER + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows)


def nfcorpus_files(rng: random.Random) -> dict[str, str]:
    """Foods and health markers: documents per (food, marker) topic; queries ask about a topic.
    Relevance 2: a document on the query's topic; 1: one on the same food and another marker."""
    topics = [(f, m) for f in FOODS for m in MARKERS]
    rng.shuffle(topics)
    topics = topics[:150]
    docs, by_topic, by_food = [], {}, {}
    for t, (food, marker) in enumerate(topics):
        for _k in range(rng.choice([2, 2, 3])):
            group, design = rng.choice(GROUPS), rng.choice(DESIGNS)
            n, weeks = rng.choice([24, 40, 60, 88, 120, 150, 240]), rng.choice([4, 6, 8, 12, 16, 26])
            pct = rng.randint(3, 21)
            way = rng.choice(["lowered", "raised", "did not change"])
            dose = rng.choice(["a daily serving of", "two servings a week of", "a cup a day of", "a handful of"])
            title = rng.choice(
                [
                    f"{cap(food)} and {marker} in {group}",
                    f"Effect of {food} on {marker}: {design}",
                    f"Does {food} change {marker} in {group}?",
                ]
            )
            change = f"{marker} by {pct} percent" if way != "did not change" else marker
            text = (
                f"We ran {design} in {n} {group} who had {dose} {food} for {weeks} weeks. "
                f"Compared with a control diet, {food} {way} {change}. "
                + rng.choice(
                    [
                        f"The effect was larger in those who started with poor {marker}.",
                        f"The effect faded within {rng.choice([2, 4, 8])} weeks of stopping.",
                        f"No side effects were reported by the {group}.",
                        f"Changes in {marker} were not explained by weight loss.",
                    ]
                )
            )
            doc_id = f"NFD-{len(docs) + 1}"
            docs.append({"_id": doc_id, "title": title, "text": text, "metadata": {}})
            by_topic.setdefault(t, []).append(doc_id)
            by_food.setdefault(food, []).append((t, doc_id))
    queries, split_rows = [], {"train": [], "dev": [], "test": []}
    order = list(range(len(topics)))
    rng.shuffle(order)
    splits = ["test"] * 40 + ["dev"] * 10 + ["train"] * (len(order) - 50)
    for t, split in zip(order, splits):
        food, marker = topics[t]
        q_id = f"NFQ-{len(queries) + 1}"
        queries.append(
            {
                "_id": q_id,
                "text": rng.choice(
                    [
                        f"Does {food} lower {marker}?",
                        f"{food} and {marker}",
                        f"Can {food} improve {marker}?",
                        f"{marker} and {food} in the diet",
                    ]
                ),
                "metadata": {},
            }
        )
        rows = [(q_id, d, 2) for d in by_topic[t]]
        related = [d for other, d in by_food[food] if other != t]
        rows += [(q_id, d, 1) for d in rng.sample(related, min(2, len(related)))]
        split_rows[split] += rows
    return {
        "nfcorpus/corpus.jsonl": jsonl(docs),
        "nfcorpus/queries.jsonl": jsonl(queries),
        **{f"nfcorpus/qrels/{s}.tsv": qrels(rows) for s, rows in split_rows.items()},
    }


def scifact_files(rng: random.Random) -> dict[str, str]:
    """Claims about organisms under environmental stress; each claim cites the abstracts on its
    (factor, outcome, organism). Other abstracts are distractors."""
    topics = [
        (f, o, g) for f in FACTORS for organisms, outcomes in ORGANISMS.values() for o in outcomes for g in organisms
    ]
    rng.shuffle(topics)
    docs, cited = [], []
    for t, (factor, outcome, organism) in enumerate(topics[:320]):
        n, weeks, pct = rng.choice([30, 48, 64, 90, 120, 200]), rng.choice([3, 5, 8, 10, 14, 20]), rng.randint(5, 40)
        way = rng.choice(["reduced", "increased"])
        title = rng.choice(
            [
                f"{cap(outcome)} of {organism} under {factor}",
                f"{cap(factor)} alters {outcome} in {organism}",
                f"How {factor} affects {organism}",
            ]
        )
        text = (
            f"We exposed {n} {organism} to {factor} for {weeks} weeks and measured {outcome}. "
            f"Compared with unexposed controls, {factor} {way} {outcome} by {pct} percent. "
            + rng.choice(
                [
                    f"The change was reversed once {factor} ended.",
                    "The change persisted for the rest of the season.",
                    f"Younger {organism} were affected more than older ones.",
                    "The response depended on the temperature of the site.",
                ]
            )
        )
        doc_id = str(1000 + 37 * t)
        docs.append({"_id": doc_id, "title": title, "text": text})
        cited.append((factor, outcome, organism, way, doc_id))
    queries, rows = [], {"train": [], "test": []}
    claimed = rng.sample(range(len(cited)), 100)
    for i, c in enumerate(claimed):
        factor, outcome, organism, way, doc_id = cited[c]
        verb = {"reduced": rng.choice(["reduces", "lowers"]), "increased": rng.choice(["increases", "raises"])}[way]
        q_id = str(i + 1)
        queries.append({"_id": q_id, "text": f"{cap(factor)} {verb} {outcome} in {organism}."})
        rows["test" if i < 60 else "train"].append((q_id, doc_id, 1))
    return {
        "scifact/corpus.jsonl": jsonl(docs),
        "scifact/queries.jsonl": jsonl(queries),
        **{f"scifact/qrels/{s}.tsv": qrels(r) for s, r in rows.items()},
    }


# --- sugarcrepe/ ------------------------------------------------------------------------------

SUGARCREPE_SUBSETS = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")


def scene_captions(c1, o1, rel, c2, o2, room) -> list[str]:
    return [
        f"A {c1} {o1} {rel} a {c2} {o2} in the {room}.",
        f"There is a {c1} {o1} {rel} a {c2} {o2}.",
        f"In the {room}, a {c1} {o1} sits {rel} a {c2} {o2}.",
    ]


def sugarcrepe_files(rng: random.Random) -> dict[str, str]:
    """Imaginary images ("scenes"), three captions each; each subset edits one caption per example
    the way its SugarCrepe namesake does. Examples of one scene share its file name."""
    scenes, seen = [], set()
    while len(scenes) < 60:
        c1, c2 = two(rng, COLOURS)
        o1, o2 = two(rng, OBJECTS)
        scene = (c1, o1, rng.choice(RELATIONS), c2, o2, rng.choice(ROOMS))
        if (o1, o2) not in seen:
            seen.add((o1, o2))
            scenes.append(scene)
    out = {"sugarcrepe/SUBSET": SUBSET}
    for s_idx, subset in enumerate(SUGARCREPE_SUBSETS):
        examples = {}
        for k in range(36):
            # consecutive scenes, shifted per subset: a scene recurs in about four subsets, each
            # time with another of its captions, so every example has other captions of its image
            i = (k + 7 * s_idx) % len(scenes)
            c1, o1, rel, c2, o2, room = scenes[i]
            which = (k + 2 * s_idx) % 3
            caption = scene_captions(c1, o1, rel, c2, o2, room)[which]
            if subset == "add_att":
                m = rng.choice(MATERIALS)
                negative = caption.replace(f"a {c2} {o2}", f"a {c2} {m} {o2}")
            elif subset == "add_obj":
                extra = rng.choice([o for o in OBJECTS if o not in (o1, o2)])
                negative = caption.replace(f"a {c2} {o2}", f"a {c2} {o2} and {article(extra)}")
            elif subset == "replace_att":
                new = rng.choice([c for c in COLOURS if c not in (c1, c2)])
                negative = scene_captions(new, o1, rel, c2, o2, room)[which]
            elif subset == "replace_obj":
                new = rng.choice([o for o in OBJECTS if o not in (o1, o2)])
                negative = scene_captions(c1, new, rel, c2, o2, room)[which]
            elif subset == "replace_rel":
                new = rng.choice([r for r in RELATIONS if r != rel])
                negative = scene_captions(c1, o1, new, c2, o2, room)[which]
            elif subset == "swap_att":
                negative = scene_captions(c2, o1, rel, c1, o2, room)[which]
            else:  # swap_obj
                negative = scene_captions(c1, o2, rel, c2, o1, room)[which]
            caption, negative = cap(caption), cap(negative)
            assert caption != negative
            examples[str(k)] = {
                "filename": f"smoke_scene_{i + 1:03d}.jpg",
                "caption": caption,
                "negative_caption": negative,
            }
        out[f"sugarcrepe/{subset}.json"] = json.dumps(examples, indent=2, ensure_ascii=False) + "\n"
    return out


# --- condaqa/ ---------------------------------------------------------------------------------


def condaqa_files(rng: random.Random) -> dict[str, str]:
    """Passages of four sentences around one negated sentence, with CondaQA's edits: 0 original,
    1 the negated sentence paraphrased (negation kept), 2 its scope changed, 3 the negation undone.
    One question per passage, asked of every edit."""
    rows, sample_id = [], 5000
    pairs_used = Unique(rng)
    for p in range(40):
        town, building = pairs_used.draw(lambda r: [r.choice(TOWNS), r.choice(BUILDINGS)])
        built, later = rng.randint(1820, 1900), rng.randint(1905, 1990)
        use = rng.choice(USES)
        kind = rng.choice(["did not", "never", "no"])
        if kind == "did not":
            base, past = rng.choice(
                [("close", "closed"), ("flood", "flooded"), ("reopen", "reopened"), ("change", "changed")]
            )
            neg = f"The {building} did not {base} during the war."
            edits = {
                1: f"During the war, the {building} did not {base}.",
                2: f"The {building} did not {base} after the war.",
                3: f"The {building} {past} during the war.",
            }
            question, answers = f"Did the {building} {base} during the war?", ["NO", "NO", "DON'T KNOW", "YES"]
        elif kind == "never":
            what = rng.choice(["a fire", "a storm", "a flood", "a break-in"])
            neg = f"The {building} never suffered {what} in all those years."
            edits = {
                1: f"In all those years, the {building} never suffered {what}.",
                2: f"The {building} never suffered {what} before {later}.",
                3: f"The {building} suffered {what} in all those years.",
            }
            question, answers = f"Did the {building} ever suffer {what}?", ["NO", "NO", "DON'T KNOW", "YES"]
        else:
            thing, some = rng.choice(
                [
                    ("electric light", "electric light"),
                    ("running water", "running water"),
                    ("heating", "heating"),
                    ("telephone", "a telephone"),
                ]
            )
            neg = f"There was no {thing} in the {building} until {later}."
            edits = {
                1: f"Until {later}, the {building} had no {thing}.",
                2: f"There was no {thing} in the {building} after {later}.",
                3: f"There was {some} in the {building} until {later}.",
            }
            question, answers = f"Did the {building} have {some} before {later}?", ["NO", "NO", "YES", "YES"]
        first = f"The {building} in {town} was built in {built}."
        after = [
            f"Since {later + rng.randint(2, 20)} it has served as {use}.",
            f"Visitors can reach it by {rng.choice(['bus', 'train', 'bicycle', 'ferry'])} from the town centre.",
        ]
        passages = {0: " ".join([first, neg, *after])}
        for e, sentence in edits.items():
            passages[e] = " ".join([first, sentence, *after])
        cue = {"did not": "not", "never": "never", "no": "no"}[kind]
        for e in range(4):
            sample_id += 1
            rows.append(
                {
                    "QuestionID": f"q{p + 1}",
                    "original cue": cue,
                    "PassageEditID": e,
                    "original passage": passages[0],
                    "SampleID": sample_id,
                    "label": answers[e],
                    "original sentence": neg,
                    "sentence2": question,
                    "PassageID": 100 + p,
                    "sentence1": passages[e],
                }
            )
    return {"condaqa/condaqa_dev.jsonl": jsonl(rows)}


if __name__ == "__main__":
    raise SystemExit(main())
