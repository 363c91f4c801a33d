"""Trace replay of the openb GPU cluster trace and the FGD paper's six baseline policies.

`openb` reads the data (kept outside the repository), `engine.replay` runs one policy on one arrival
order, `metrics` bins a run the way the published results are binned, `run.run_many` spreads many runs
over processes. Policies are `scorer.Scorer`s; the baselines live in `baselines`.
"""
