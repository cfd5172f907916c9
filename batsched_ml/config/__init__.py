"""The run configuration, its modules in the order a configuration is built.

1. ``declare``  -- ``RunConfig``: every setting of a run declared
   once (flag, help, default, check), built from the command line, a campaign table or Python;
   ``presets`` beside it: the named configurations ``--preset`` starts from.
2. ``validate`` -- the value checks (a seed, a tau, a machine size...): one line naming the
   setting; ``params`` beside it: the estimator contract every learning component follows.
3. ``plugins``  -- the plugins by name (entry points), loaded and their API version checked.
4. ``resolve``  -- a ``RunConfig`` checked against the installed plugins: which ``-o`` options each
   component takes, the defaults of what the scheduler takes filled in, one-line errors.
5. ``compose``  -- the resolved configuration built into a scheduler, its collaborators injected.

Nothing is re-exported here: an import names the module it uses
(``from batsched_ml.config.declare import RunConfig``). The components (schedulers, predictors...)
use ``validate`` and ``params`` only; the rest sits above them (pyproject.toml's import contract).
"""
