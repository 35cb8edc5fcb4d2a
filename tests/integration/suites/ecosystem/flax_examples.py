"""flax's ``examples/`` on jax and on funcgrad (through ``funcgrad.as_jax``), at reduced sizes, on
synthetic data, in JAX's default 32-bit mode: each example's own ``train_and_evaluate`` runs unchanged
(the checkout's ``examples/NAME/train.py``), with only its data pipeline and its logging replaced, and
prints what it logged (losses, accuracies, perplexities, BLEU, generated samples); ``--compare`` runs
every example on both backends and reports the largest relative difference of the numbers.

    python tests/integration/suites/ecosystem/flax_examples.py --compare [--flax /tmp/ecosystem/flax]
    python tests/integration/suites/ecosystem/flax_examples.py jax|funcgrad EXAMPLE   # one side
    python tests/integration/suites/ecosystem/flax_examples.py --scripts [NAME ...]   # nnx_toy_examples

Replaced, the same on both sides (none of them is installed here, and no data can be downloaded):
``tensorflow`` / ``tensorflow_datasets`` (a numpy stand-in for the few ``tf.data`` calls the examples
make: ``map`` applied to the whole split, ``batch``, iteration; ``tf.cast``, ``tf.io.gfile``),
``clu.metric_writers`` / ``clu.periodic_actions`` and ``flax.metrics.tensorboard`` (writers that
record what is written), and the examples' ``input_pipeline.get_*datasets`` (random token batches
and a character-level encoder). The examples' models, losses, optimizers, ``jax.jit`` with mesh
shardings (lm1b), ``jax.pmap`` over devices with ``donate_argnums`` (wmt), temperature sampling and
beam search run as written.

- ``mnist``: examples/mnist (nnx CNN with BatchNorm and Dropout, ``nnx.jit``, ``nnx.Optimizer`` of
  ``optax.sgd`` with momentum, ``nnx.MultiMetric``), 2 epochs of 8 batches of 32.
- ``lm1b``: examples/lm1b (linen TransformerLM, logical-axis partitioning on a ``data/fsdp/tensor``
  mesh, ``jax.jit`` with in/out shardings and donation, temperature sampling with top-k), 4 steps of
  a 2-layer model with an embedding of 32 over 2 devices.
- ``wmt``: examples/wmt (linen encoder-decoder Transformer, ``jax.pmap`` train/eval/cache/predict
  steps, beam search of 4, BLEU), 4 steps of a 2-layer model over 2 devices.

``--scripts`` runs the scripts of examples/nnx_toy_examples as written on both backends (NumPy's
global generator seeded after importing jax, plots to matplotlib's Agg backend) and compares their
printed text, numbers to a relative 1e-4; ``05_vae`` (a Hugging Face data set) is left out.

Run with ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` (``--compare`` sets it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import types

import numpy as np

EXAMPLES = ("mnist", "lm1b", "wmt")
FLAX = ["/tmp/ecosystem/flax"]
RECORD: dict = {"scalars": {}, "texts": {}}


# ---------------------------------------------------------------------------------------------
# Stand-ins for what the examples import and cannot have here


class Tensor:
    """What iterating a ``tf.data.Dataset`` yields: an array with ``numpy()`` and ``_numpy()``."""

    def __init__(self, value):
        self.value = value if isinstance(value, bytes) else np.asarray(value)

    def numpy(self):
        return self.value

    _numpy = numpy

    def __array__(self, dtype=None, copy=None):
        return self.value if dtype is None else self.value.astype(dtype)


class Dataset:
    """A split held as a dict of numpy arrays (whole-split ``map``), batched on demand."""

    def __init__(self, columns, batch_size=None, wrap=False):
        self.columns, self.batch_size, self.wrap = columns, batch_size, wrap

    def map(self, fn, **_):
        return Dataset(fn(self.columns), self.batch_size, self.wrap)

    def shuffle(self, *_, **__):
        return self

    def prefetch(self, *_):
        return self

    def cache(self):
        return self

    def repeat(self, *_):
        return self

    def take(self, n):
        return Dataset(
            {k: v[: n * (self.batch_size or 1)] for k, v in self.columns.items()}, self.batch_size, self.wrap
        )

    def batch(self, batch_size, drop_remainder=False):
        return Dataset(self.columns, batch_size, self.wrap)

    def __iter__(self):
        n = len(next(iter(self.columns.values())))
        size = self.batch_size or 1
        for start in range(0, n - size + 1, size):
            batch = {k: v[start : start + size] for k, v in self.columns.items()}
            yield {k: Tensor(v) for k, v in batch.items()} if self.wrap else batch

    def as_numpy_iterator(self):
        for batch in self:
            yield {k: np.asarray(v) for k, v in batch.items()}


class Encoder:
    """A character-level stand-in for the examples' SentencePiece tokenizer (ids 3..vocab-1)."""

    def __init__(self, vocab=64):
        self.vocab = vocab

    def vocab_size(self):
        return self.vocab

    def tokenize(self, text):
        ids = [3 + (ord(c) % (self.vocab - 3)) for c in text] + [2]  # EOS_ID is 2 in both examples
        return Tensor(np.array(ids, np.int32))

    def detokenize(self, ids):
        text = "".join(chr(ord("a") + (int(i) - 3) % 26) if i > 2 else "" for i in np.asarray(ids))
        return Tensor(text.encode())


class Writer:
    """clu's metric writer and flax's tensorboard SummaryWriter: records what is written."""

    def __init__(self, *_, **__):
        pass

    def write_scalars(self, step, scalars):
        for k, v in scalars.items():
            RECORD["scalars"][f"{step}/{k}"] = float(np.asarray(v))

    def scalar(self, tag, value, step):
        self.write_scalars(step, {tag: value})

    def write_texts(self, step, texts):
        RECORD["texts"].update({f"{step}/{k}": v for k, v in texts.items()})

    def write_hparams(self, *_):
        pass

    hparams = write_hparams

    def flush(self):
        pass

    def close(self):
        pass


class ReportProgress:
    def __init__(self, *_, **__):
        pass

    def __call__(self, *_):
        pass

    def timed(self, *_, **__):
        import contextlib

        return contextlib.nullcontext()


def install_stand_ins():
    import contextlib

    import flax.io  # noqa: F401  (before the stand-in: flax.io asks whether tensorflow is installed)

    def module(name, **attrs):
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        sys.modules[name] = mod
        return mod

    tf = module(
        "tensorflow",
        float32=np.float32,
        int32=np.int32,
        int64=np.int64,
        cast=lambda x, dtype: np.asarray(x).astype(dtype),
        random=types.SimpleNamespace(set_seed=lambda seed: None),
        io=types.SimpleNamespace(
            gfile=types.SimpleNamespace(makedirs=lambda p: os.makedirs(p, exist_ok=True))
        ),
        data=types.SimpleNamespace(
            Dataset=Dataset, AUTOTUNE=-1, experimental=types.SimpleNamespace(AUTOTUNE=-1)
        ),
        TensorSpec=lambda *a, **k: None,
    )
    tf.__path__ = []
    module(
        "tensorflow_datasets",
        load=lambda *a, **k: mnist_split(k.get("split", a[1] if len(a) > 1 else "train")),
    )
    clu = module("clu")
    clu.__path__ = []
    clu.metric_writers = module(
        "clu.metric_writers",
        create_default_writer=lambda *a, **k: Writer(),
        ensure_flushes=lambda *w: contextlib.nullcontext(),
    )
    clu.periodic_actions = module(
        "clu.periodic_actions", ReportProgress=ReportProgress, Profile=ReportProgress
    )
    module("flax.metrics.tensorboard", SummaryWriter=Writer)
    module("sentencepiece")


def mnist_split(split):
    rng = np.random.default_rng({"train": 0, "test": 1}[split])
    n = {"train": 256, "test": 64}[split]
    return Dataset(
        {"image": rng.integers(0, 256, (n, 28, 28, 1), dtype=np.uint8), "label": rng.integers(0, 10, n)}
    )


def token_split(n, length, vocab, seed, *, pairs):
    rng = np.random.default_rng(seed)

    def sequences():
        lengths = rng.integers(length // 2, length + 1, n)
        ids = rng.integers(3, vocab, (n, length)).astype(np.int32)
        ids[np.arange(length)[None, :] >= lengths[:, None]] = 0
        ids[np.arange(n), lengths - 1] = 2  # EOS
        return ids

    return {"inputs": sequences(), "targets": sequences()} if pairs else {"inputs": sequences()}


# ---------------------------------------------------------------------------------------------
# The examples


def load_example(name, **pipeline):
    """The example's train module, with its ``input_pipeline`` replaced by ``pipeline``'s functions."""
    folder = os.path.join(FLAX[0], "examples", name)
    sys.path.insert(0, folder)
    for mod in ("train", "models", "input_pipeline", "utils", "configs", "configs.default", "decode"):
        sys.modules.pop(mod, None)
    if pipeline:
        sys.modules["input_pipeline"] = types.ModuleType("input_pipeline")
        sys.modules["input_pipeline"].__dict__.update(pipeline)
    import train
    from configs import default

    return train, default.get_config(), folder


def mnist(workdir):
    train, config, _ = load_example("mnist")
    config.batch_size, config.num_epochs = 32, 2
    try:
        train.train_and_evaluate(config, workdir)
    except ImportError as e:  # the SavedModel export after training (orbax.export, tensorflow)
        RECORD["texts"]["export"] = f"skipped: {e.name}"


def _language_config(config, *, pairs):
    for key, value in dict(
        vocab_size=64, per_device_batch_size=2, eval_per_device_batch_size=2, num_train_steps=4,
        eval_every_steps=2, num_eval_steps=2, max_target_length=16, max_eval_target_length=16,
        max_predict_length=12, num_layers=2, qkv_dim=32, emb_dim=32, mlp_dim=64, num_heads=2,
        warmup_steps=2, save_checkpoints=False, restore_checkpoints=False, checkpoint_every_steps=100,
    ).items():  # fmt: skip
        setattr(config, key, value)
    if pairs:
        config.beam_size, config.num_predict_steps = 2, 1
    else:
        config.use_bfloat16 = False


def lm1b(workdir):
    import jax

    def get_datasets(config, *, n_devices, vocab_path=None):
        n = jax.local_device_count() * config.per_device_batch_size
        train_ds = Dataset(token_split(64, config.max_target_length, config.vocab_size, 0, pairs=False), n)
        eval_ds = Dataset(
            token_split(16, config.max_eval_target_length, config.vocab_size, 1, pairs=False), n, True
        )
        return iter(train_ds), eval_ds, None, Encoder(config.vocab_size)

    train, config, _ = load_example("lm1b", get_datasets=get_datasets)
    _language_config(config, pairs=False)
    train.train_and_evaluate(config, workdir)


def wmt(workdir):
    import jax

    def get_wmt_datasets(config, *, n_devices, reverse_translation=False, vocab_path=None):
        n = jax.local_device_count() * config.per_device_batch_size
        train_ds = Dataset(token_split(64, config.max_target_length, config.vocab_size, 0, pairs=True), n)
        eval_ds = Dataset(
            token_split(16, config.max_eval_target_length, config.vocab_size, 1, pairs=True), n, True
        )
        predict_ds = Dataset(
            token_split(8, config.max_predict_length, config.vocab_size, 2, pairs=True), n, True
        )
        return iter(train_ds), eval_ds, predict_ds, Encoder(config.vocab_size)

    train, config, _ = load_example("wmt", get_wmt_datasets=get_wmt_datasets)
    _language_config(config, pairs=True)
    np.random.seed(0)  # the example picks the exemplars it logs with NumPy's global generator
    train.train_and_evaluate(config, workdir)


def run_one(backend, example):
    if backend == "funcgrad":
        import funcgrad.as_jax  # noqa: F401
    install_stand_ins()
    with tempfile.TemporaryDirectory(prefix=f"flax-{example}-") as workdir:
        globals()[example](workdir)
    return RECORD


def _difference(a, b):
    keys = sorted(set(a["scalars"]) | set(b["scalars"]))
    worst = 0.0
    for k in keys:
        x, y = a["scalars"].get(k), b["scalars"].get(k)
        if x is None or y is None:
            return float("inf")
        if x != y:
            worst = max(worst, abs(x - y) / max(abs(x), abs(y), 1e-30))
    return worst


def compare(examples, timeout):
    report = {}
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    for example in examples:
        side = {}
        for backend in ("jax", "funcgrad"):
            cmd = [sys.executable, __file__, backend, example, "--flax", FLAX[0]]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
                lines = proc.stdout.strip().splitlines()
                if proc.returncode or not lines:
                    side[backend] = {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
                else:
                    side[backend] = json.loads(lines[-1])
            except subprocess.TimeoutExpired:
                side[backend] = {"error": f"timed out after {timeout} s"}
        if all("scalars" in s for s in side.values()):
            side["max_rel_diff"] = _difference(side["jax"], side["funcgrad"])
            side["same_texts"] = side["jax"]["texts"] == side["funcgrad"]["texts"]
        report[example] = side
        print(example, json.dumps(side), flush=True)
    return report


SCRIPTS = "examples/nnx_toy_examples"
NUMBER = r"-?\d+\.?\d*(?:[eE][-+]?\d+)?"


def compare_scripts(timeout, only=()):
    """Every script of flax's ``examples/nnx_toy_examples`` as written, on both backends (plots to
    matplotlib's Agg backend), its printed text compared with numbers to a relative 1e-4; scripts
    that load a data set (``datasets``) are left out."""
    import re

    folder = os.path.join(FLAX[0], SCRIPTS)
    report = {}
    for script in sorted(f for f in os.listdir(folder) if f.endswith(".py")):
        with open(os.path.join(folder, script)) as f:
            source = f.read()
        if "load_dataset" in source or (only and not any(o in script for o in only)):
            continue
        out = {}
        env = dict(os.environ, MPLBACKEND="Agg", JAX_PLATFORMS="cpu")
        # (04 and 10 set 8 host devices before importing jax, which the runner does first)
        if "device_count=8" in source:
            env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
        for backend, alias in (("jax", ""), ("funcgrad", "import funcgrad.as_jax; ")):
            # NumPy's global generator seeded after importing jax (the scripts draw their data from it
            # unseeded, and real jax's import draws from it), as run_ecosystem_docs.py does
            run = f"{alias}import jax, numpy, runpy; numpy.random.seed(0); "
            run += f"runpy.run_path({script!r}, run_name='__main__')"
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", run],
                    cwd=folder,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                    env=env,
                )
                out[backend] = (
                    proc.stdout
                    if proc.returncode == 0
                    else "error: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
                )
            except subprocess.TimeoutExpired:
                out[backend] = f"error: timed out after {timeout} s"
        a, b = (re.sub(r"0x[0-9a-f]+", "0x", out[side]) for side in ("jax", "funcgrad"))  # (object addresses)
        # (the text around the numbers, blanks collapsed: NumPy pads printed arrays to the widest number)
        worst, same_text = 0.0, re.sub(NUMBER, "#", a).split() == re.sub(NUMBER, "#", b).split()
        na, nb = [float(x) for x in re.findall(NUMBER, a)], [float(x) for x in re.findall(NUMBER, b)]
        if len(na) != len(nb):
            same_text = False
        for x, y in zip(na, nb):
            if x != y:
                worst = max(worst, abs(x - y) / max(abs(x), abs(y), 1e-30))
        verdict = (
            "fails on jax"
            if a.startswith("error")
            else ("same" if same_text and worst <= 1e-4 else "differs")
        )
        report[script] = {"verdict": verdict, "max_rel_diff": worst, "same_text": same_text}
        if verdict != "same":
            report[script].update(jax=a[-300:], funcgrad=b[-300:])
        print(script, json.dumps(report[script]), flush=True)
    return report


def main(argv):
    if "--flax" in argv:
        i = argv.index("--flax")
        FLAX[0] = argv[i + 1]
        del argv[i : i + 2]
    if argv and argv[0] == "--scripts":
        compare_scripts(timeout=900, only=argv[1:])
        return 0
    if argv and argv[0] == "--compare":
        compare([a for a in argv[1:] if a in EXAMPLES] or EXAMPLES, timeout=900)
        return 0
    print(json.dumps(run_one(argv[0], argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
