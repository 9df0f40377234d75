"""Experiment: what one minibatch-ADVI step compiles to, ours against NumPyro SVI's.

On an H200 the package's minibatch ADVI of the 784-100-10 network ran 0.77x NumPyro
SVI's steps per second (``benchmarks/results/wide_network.md``). A step there is a few
hundred microseconds, so the number and the kind of device operations in the loop body
matter more than arithmetic. This script lowers both loops (ten steps of batch 500 on
random data of that shape), prints how many of each operation the StableHLO holds
(before XLA's passes) and how many fusions the optimised HLO of the current device
holds (on a GPU, about one kernel each), and lists the scatters with their shapes.
No timing: run it where the device is (``python research/experiments/advi_step_ops.py``)
beside ``benchmarks/wide_network.py --sections advi``.
"""

import collections
import functools
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import numpy as np  # noqa: E402

STEPS, BATCH, ROWS = 10, 500, 2000
OPS = re.compile(r"stablehlo\.[a-z_]+")


def ours(X, y):
    """The package's compiled scan (rows gathered and noise drawn on the device, as on
    a GPU) and its arguments."""
    import jax.numpy as jnp
    import pymc as pm

    import pymc_bnn
    from pymc_bnn.inference import _compiled_vi as compiled_vi

    model = pymc_bnn.build_model(X, y, hidden_layer_sizes=(100,), batch_size=BATCH, random_state=0)
    with model:
        advi = pm.ADVI()
    runner = compiled_vi.ScanADVI(
        advi, learning_rate=0.01, mode="JAX", device_gather=True, device_noise=True
    )
    vm = runner.fn.vm
    values = [vm.storage_map[v][0] for v in runner.fn.maker.fgraph.inputs]
    for i, arg in enumerate(runner._draw(STEPS, np.random.default_rng(0))):
        values[i] = arg  # the call's inputs come first, then the shared variables
    values = [jnp.asarray(v) if isinstance(v, np.ndarray) else v for v in values]
    return vm.jit_fn.lower(*values)


def numpyro_svi(X, y):
    """NumPyro SVI's update in a ``fori_loop`` (as ``SVI.run`` without a progress bar),
    the model of ``benchmarks/wide_network.py``."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.optim import Adam
    from wide_network import SHAPES, numpyro_categorical

    model = functools.partial(numpyro_categorical, shapes=SHAPES, subsample_size=BATCH)
    svi = SVI(model, AutoNormal(model), Adam(0.01), Trace_ELBO())
    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    state = svi.init(jax.random.PRNGKey(0), Xj, yj)

    def loop(state):
        return jax.lax.fori_loop(0, STEPS, lambda i, s: svi.update(s, Xj, yj)[0], state)

    return jax.jit(loop).lower(state)


def report(name, lowered) -> dict:
    text = lowered.as_text()
    ops = collections.Counter(OPS.findall(text))
    optimised = lowered.compile().as_text()
    fusions = len(re.findall(r"\bfusion(\.\d+)?\(", optimised))
    scatters = re.findall(r"stablehlo\.scatter.*?\}\) : \(([^)]*)\)", text, flags=re.S)
    print(
        f"{name}: {sum(ops.values())} StableHLO operations, {fusions} fusions after "
        f"XLA's passes on this device"
    )
    print("  most frequent: " + ", ".join(f"{k.split('.')[1]} {v}" for k, v in ops.most_common(12)))
    for shapes in scatters:
        print(f"  scatter: {shapes}")
    return {"ops": dict(ops), "fusions": fusions, "scatters": scatters}


def main():
    import jax

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(ROWS, 784)), rng.integers(0, 10, ROWS)
    print(f"device: {jax.devices()[0].device_kind}; {STEPS} steps of batch {BATCH}")
    report("pymc_bnn (compiled scan)", ours(X, y))
    report("numpyro SVI (fori_loop of update)", numpyro_svi(X, y))


if __name__ == "__main__":
    main()
