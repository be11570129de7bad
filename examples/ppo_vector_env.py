"""Masked PPO in plain torch on the batched env, in the style of CleanRL's ``ppo.py``: one file, read
top to bottom, for a learner of your own (docs/guide/environment.md "The batched env").

The env is ``treppen_env.vector_env(num_envs, opponents="greedy")``: every row is a deal against
the greedy heuristic, played inside one kernel call per step. The policy is a small MLP over the
969-number observation whose logits are masked to the legal actions (``infos["action_mask"]``). It
prints the env steps per second the learner gets, the env alone and with the learner, and the mean
reward of finished deals.

Usage::

    python examples/ppo_vector_env.py --num-envs 64 --num-steps 64 --updates 50
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

import treppen_env


@dataclass
class Args:
    num_envs: int = 64
    """deals stepped side by side (rows of the batched env)"""
    num_steps: int = 64
    """steps per row and rollout"""
    updates: int = 20
    """rollouts and updates"""
    learning_rate: float = 3e-4
    gamma: float = 0.995
    gae_lambda: float = 0.95
    epochs: int = 2
    minibatches: int = 4
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    hidden: int = 128
    seed: int = 0


class Agent(nn.Module):
    """An actor-critic MLP over the observation; the actor's logits masked to the legal actions."""

    def __init__(self, obs_size: int, actions: int, hidden: int):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.actor = nn.Linear(hidden, actions)
        self.critic = nn.Linear(hidden, 1)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self.body(obs)).squeeze(-1)

    def act(self, obs: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None):
        hidden = self.body(obs)
        logits = self.actor(hidden).masked_fill(~mask, -1e9)
        dist = torch.distributions.Categorical(logits=logits)
        action = dist.sample() if action is None else action
        return action, dist.log_prob(action), dist.entropy(), self.critic(hidden).squeeze(-1)


def parse(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in vars(Args()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    return Args(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parse(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    # same-step auto-reset, as CleanRL's loop expects: a finished row returns its next deal's first
    # observation at once (the final one in infos["final_obs"])
    envs = treppen_env.vector_env(args.num_envs, 2, opponents="greedy", copy=True, autoreset_mode="same_step")
    obs_np, infos = envs.reset(seed=args.seed)
    agent = Agent(obs_np.shape[1], envs.single_action_space.n, args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    n, t = args.num_envs, args.num_steps
    obs = torch.zeros((t, n, obs_np.shape[1]))
    masks = torch.zeros((t, n, envs.single_action_space.n), dtype=torch.bool)
    actions = torch.zeros((t, n), dtype=torch.long)
    logprobs, rewards, dones, values = (torch.zeros((t, n)) for _ in range(4))
    next_obs, next_mask = torch.as_tensor(obs_np), torch.as_tensor(infos["action_mask"] != 0)
    next_done = torch.zeros(n)
    env_time = learn_time = 0.0
    finished: list[float] = []
    for _ in range(args.updates):
        start = time.process_time()
        for step in range(t):  # the rollout: one kernel call per step for all rows
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.act(next_obs, next_mask)
            actions[step], logprobs[step], values[step] = action, logprob, value
            tick = time.process_time()
            obs_np, reward, terminated, truncated, infos = envs.step(action.numpy())
            env_time += time.process_time() - tick
            done = terminated | truncated
            finished += reward[done].tolist()
            rewards[step] = torch.as_tensor(reward)
            next_obs, next_mask = torch.as_tensor(obs_np), torch.as_tensor(infos["action_mask"] != 0)
            next_done = torch.as_tensor(done, dtype=torch.float32)
        with torch.no_grad():  # generalized advantage estimation
            advantages = torch.zeros((t, n))
            last = 0.0
            next_value = agent.value(next_obs)
            for step in reversed(range(t)):
                nonterminal = 1.0 - (next_done if step == t - 1 else dones[step + 1])
                following = next_value if step == t - 1 else values[step + 1]
                delta = rewards[step] + args.gamma * following * nonterminal - values[step]
                advantages[step] = last = delta + args.gamma * args.gae_lambda * nonterminal * last
            returns = advantages + values
        b_obs, b_masks, b_actions = obs.reshape(t * n, -1), masks.reshape(t * n, -1), actions.reshape(-1)
        b_logprobs, b_adv, b_returns = logprobs.reshape(-1), advantages.reshape(-1), returns.reshape(-1)
        order = np.arange(t * n)
        size = t * n // args.minibatches
        for _ in range(args.epochs):  # the clipped PPO update
            np.random.default_rng(args.seed).shuffle(order)
            for k in range(0, t * n, size):
                idx = torch.as_tensor(order[k : k + size])
                _, new_logprob, entropy, new_value = agent.act(b_obs[idx], b_masks[idx], b_actions[idx])
                ratio = (new_logprob - b_logprobs[idx]).exp()
                adv = (b_adv[idx] - b_adv[idx].mean()) / (b_adv[idx].std() + 1e-8)
                policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip, 1 + args.clip)).mean()
                loss = policy_loss + args.vf_coef * ((new_value - b_returns[idx]) ** 2).mean()
                loss = loss - args.ent_coef * entropy.mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
        learn_time += time.process_time() - start
    steps = args.updates * t * n
    result = {
        "env_steps": steps,
        "env_steps_per_cpu_s_env_only": steps / env_time,
        "env_steps_per_cpu_s_learner": steps / learn_time,
        "deals_finished": len(finished),
        "mean_reward_of_finished_deals": float(np.mean(finished)) if finished else float("nan"),
    }
    print(
        f"{steps} env steps: {result['env_steps_per_cpu_s_env_only']:,.0f} per CPU s in the env, "
        f"{result['env_steps_per_cpu_s_learner']:,.0f} per CPU s with the learner; "
        f"{len(finished)} deals finished, mean reward {result['mean_reward_of_finished_deals']:+.3f}"
    )
    return result


if __name__ == "__main__":
    main()
