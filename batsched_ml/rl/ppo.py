"""Training a scoring network with PPO and action masking (sb3-contrib's MaskablePPO) in the
Gymnasium environment: the ``[rl]`` extra (``pip install 'batsched-ml[rl]'``; torch, CPU build).

The actor is RLScheduler's kernel network: one small MLP applied to every slot of the window
(the four scoring features of a job), its outputs the slots' logits; masked slots never get
probability. It is therefore exactly a :class:`~batsched_ml.policies.network.ScoringNetwork`,
exported as such after training (numpy inference: ``--policy rl:FILE`` needs no torch; the
greedy choice of the trained agent is the plugin's order). The critic sees the whole flattened
observation (window and machine). Checkpoints: the model (``OUTPUT.ppo.zip``) and the
exported network every ``checkpoint_every`` steps; the same command resumes from the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..policies.network import AGENT_FEATURES, FEATURES, ScoringNetwork
from ..stopwatch import Stopwatch
from .episodes import TrainingSettings

__all__ = ["PPOConfig", "train_ppo"]


@dataclass(frozen=True)
class PPOConfig(TrainingSettings):
    timesteps: int = 100_000
    window: int = 128
    reward: str = "bsld-step"
    envs: int = 1
    n_steps: int = 2048
    checkpoint_every: int = 10_000


def _require():
    try:
        import sb3_contrib  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise ValueError(f"--algorithm ppo needs the [rl] extra ({exc.name} is not installed): "
                         "pip install torch==<a CPU build> 'batsched-ml[rl]'") from None


def _policy_class(window: int, hidden: tuple, columns: tuple = FEATURES):
    """The MaskablePPO policy whose actor scores each slot with one shared MLP (see the module doc)."""
    import torch
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from torch import nn

    width = 6  # observation.JOB_COLUMNS

    class Flatten(BaseFeaturesExtractor):
        def __init__(self, observation_space):
            super().__init__(observation_space, window * width + 2)

        def forward(self, obs):
            return torch.cat((obs["jobs"].flatten(1), obs["machine"]), dim=1)

    class ScoringActorCritic(nn.Module):
        def __init__(self, features_dim: int):
            super().__init__()
            sizes = [len(columns), *hidden]
            layers = []
            for a, b in zip(sizes, sizes[1:]):
                layers += [nn.Linear(a, b), nn.Tanh()]
            self.scorer = nn.Sequential(*layers, nn.Linear(sizes[-1], 1))
            self.critic = nn.Sequential(nn.Linear(features_dim, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
            self.latent_dim_pi, self.latent_dim_vf = window, 64

        def forward_actor(self, features):
            jobs = features[:, :window * width].reshape(-1, window, width)[:, :, :len(columns)]
            return self.scorer(jobs).squeeze(-1)

        def forward_critic(self, features):
            return self.critic(features)

        def forward(self, features):
            return self.forward_actor(features), self.forward_critic(features)

    class ScoringPolicy(MaskableActorCriticPolicy):
        def __init__(self, *args, **kwargs):
            kwargs.pop("net_arch_hidden", None)  # recorded for resuming; the shape is this class's
            kwargs.setdefault("features_extractor_class", Flatten)
            kwargs["ortho_init"] = False
            super().__init__(*args, **kwargs)

        def _build_mlp_extractor(self) -> None:
            self.mlp_extractor = ScoringActorCritic(self.features_dim)

        def _build(self, lr_schedule) -> None:
            super()._build(lr_schedule)
            self.action_net = nn.Identity()  # the scorer's outputs are the logits
            self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    return ScoringPolicy


def export(model, hidden: tuple, features: tuple = FEATURES) -> ScoringNetwork:
    """The trained actor as a numpy :class:`ScoringNetwork`."""
    linears = [m for m in model.policy.mlp_extractor.scorer if hasattr(m, "weight")]
    layers = [(m.weight.detach().cpu().numpy().T.astype(np.float64), m.bias.detach().cpu().numpy().astype(np.float64))
              for m in linears]
    return ScoringNetwork(layers, features)


def _features(config) -> tuple:
    """The observation columns the scorer reads (a prefix of ``observation.JOB_COLUMNS``)."""
    return AGENT_FEATURES if config.fits_now else FEATURES


def step_progress(timesteps: int, already: int, enabled: bool, stream=None):
    """PPO's progress in environment steps: a bar on a terminal, a status line every 30 s in a log
    (a carriage-return bar there wrote a hundred updates into one line)."""
    from ..progress import TaskProgress

    return TaskProgress.for_cli(timesteps, "train-policy (ppo)", enabled=enabled, stream=stream, unit="step",
                                initial=min(already, timesteps))


def train_ppo(config: PPOConfig, output, *, checkpoint=None, restart: bool = False, progress: bool = True,
              log=None) -> ScoringNetwork:
    _require()
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from .env import SchedulingEnv

    if config.timesteps < 1 or config.envs < 1:
        raise ValueError("--timesteps and --envs must be >= 1")
    model_path = Path(checkpoint) if checkpoint is not None else Path(str(output) + ".ppo.zip")

    def make(rank: int):
        def build():
            env = SchedulingEnv(config.workload, config.nb_cores, sequence_length=config.sequence_length,
                                start_range=config.start_range, window=config.window, backfill=config.backfill,
                                reward=config.reward, protocol=config.protocol)
            env.reset(seed=config.seed * 1000 + rank)
            return Monitor(env)
        return build

    builders = [make(i) for i in range(config.envs)]
    venv = DummyVecEnv(builders) if config.envs == 1 else SubprocVecEnv(builders)
    trace_name = venv.get_attr("trace")[0].name
    nb_cores = venv.get_attr("nb_cores")[0]
    n_steps = max(16, min(config.n_steps, config.timesteps // config.envs))
    if model_path.exists() and not restart:
        model = MaskablePPO.load(model_path, env=venv)
        saved = model.policy_kwargs.get("net_arch_hidden")
        if saved != list(config.hidden):
            raise ValueError(f"{model_path} has hidden layers {saved}, not {list(config.hidden)}: pass --restart")
        if log is not None:
            log(f"resuming from {model_path} at step {model.num_timesteps}")
    else:
        policy = _policy_class(config.window, tuple(config.hidden), _features(config))
        model = MaskablePPO(policy, venv, n_steps=n_steps, batch_size=min(64, n_steps * config.envs),
                            seed=config.seed, verbose=0, device="cpu",
                            policy_kwargs={"net_arch_hidden": list(config.hidden)})
    session, already = Stopwatch().start(), model.num_timesteps

    class Checkpoints(BaseCallback):
        def __init__(self):
            super().__init__()
            self.bar = None
            self.last = model.num_timesteps

        def _on_training_start(self):
            self.bar = step_progress(config.timesteps, already, progress)
            self.bar.start()

        def _on_step(self) -> bool:
            self.bar.advance(self.training_env.num_envs)
            if self.num_timesteps - self.last >= config.checkpoint_every:
                self.last = self.num_timesteps
                save()
            return True

        def _on_training_end(self):
            self.bar.close()

    def save():
        model.save(model_path)
        network = export(model, config.hidden, _features(config))
        network.machine_cores = nb_cores
        wall, cpu = session.elapsed()
        network.metadata = {"algorithm": "maskable-ppo", "trained_on": trace_name,
                            "config": {**asdict(config), "hidden": list(config.hidden)},
                            "timesteps": int(model.num_timesteps),
                            "wall_time_s": round(wall, 1), "cpu_time_s": round(cpu, 1),
                            "note": "wall/cpu time of the last (resumed) session only; timesteps are env decisions"}
        network.save(output)
        return network

    try:
        remaining = config.timesteps - model.num_timesteps
        if remaining > 0:
            model.learn(remaining, callback=Checkpoints(), reset_num_timesteps=False)
        return save()
    except KeyboardInterrupt:
        save()
        raise
    finally:
        venv.close()
