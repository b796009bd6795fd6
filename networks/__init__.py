"""Networks with the search's `eval_fn` signature."""

from networks.mlp import MLP, MLPEval, init_params, mlp_eval

__all__ = ["MLP", "MLPEval", "init_params", "mlp_eval"]
