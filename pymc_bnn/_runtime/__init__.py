"""What the package needs at run time, whatever stage it is in (private).

- :mod:`~pymc_bnn._runtime.threads`: how many threads the package may use.
- :mod:`~pymc_bnn._runtime.device`: where compiled JAX programs run, and how arrays are
  kept there between calls.
- :mod:`~pymc_bnn._runtime.compile_cache`: a persistent cache of JAX compilations, so a
  new process does not compile again.
- :mod:`~pymc_bnn._runtime.progress`: one progress display for a whole fit.
- :mod:`~pymc_bnn._runtime.lazy`: names a package exports, imported on first use.
"""
