"""What ``pymc-bnn predict``, ``evaluate`` and ``report`` decide and score: a cost-aware
threshold's predictions, and the scores of a model on labelled rows."""

from __future__ import annotations

from pymc_bnn.cli._tables import (
    BadInput,
    check_model_and_data,
    check_model_columns,
    check_present,
    format_number,
    interval_name,
    labelled_rows,
    load_model,
    match_labels,
    model_info,
    note,
    parse_separator,
    predict_rows,
    read_model_metadata,
    read_table,
    score_predictions,
)

__all__ = ["cost_threshold_for", "decide", "evaluate_rows", "predictive_nll", "score_labels"]


def cost_threshold_for(cost_fn_fp, est):
    """The threshold of --cost-fn-fp (None without it); BadInput unless two classes."""
    if cost_fn_fp is None:
        return None
    classes = getattr(est, "classes_", None)
    if classes is None or len(classes) != 2:
        raise BadInput("--cost-fn-fp applies to a model of two classes.")
    from pymc_bnn.estimators._decision import cost_threshold

    return cost_threshold(cost_fn_fp)


def decide(pred: dict, est, threshold) -> dict:
    """``pred`` with its predictions at ``threshold`` (the positive class: the second),
    or a note where the 0.5 threshold predicts every row one class."""
    if "proba" not in pred:
        return pred
    from pymc_bnn.estimators._decision import one_class_message

    if threshold is None:
        message = one_class_message(pred["prediction"], list(est.classes_), pred["proba"][:, -1])
        if message:
            note(message)
        return pred
    return {**pred, "prediction": est.classes_[(pred["proba"][:, 1] >= threshold).astype(int)]}


def evaluate_rows(model, data, target, interval, sep, cost_fn_fp=None):
    """(pipeline, metadata, labels, predictions, scores) of the labelled rows of DATA;
    with ``cost_fn_fp``, the scores of its threshold too."""
    check_model_and_data(model, data)
    sep = parse_separator(sep)
    meta = read_model_metadata(model)  # the target, before the (slow) model is built
    target = target or model_info(meta).get("target")
    if not target:
        raise BadInput(f"{model} does not record its target column; pass --target.")
    frame = read_table(data, sep=sep)
    check_present(frame, [target], data)
    check_model_columns(frame, meta, data)
    pipeline, meta = load_model(model, meta)
    est = pipeline.named_steps["model"]
    threshold = cost_threshold_for(cost_fn_fp, est)
    rows, y = labelled_rows(frame, target, est, data)
    # every row is predicted, so that a message names a row as the file counts it
    pred = predict_rows(pipeline, frame, meta, path=data, interval=interval)
    pred = decide({k: v[rows] for k, v in pred.items()}, est, None)
    scores = score_predictions(pred, y, est)
    if "mean" in pred:  # the model's own predictive density, not a Normal of its moments
        scores["nll"] = predictive_nll(pipeline, meta, frame.loc[rows], y)
    if "lower" in pred:  # coverage in fifths of the predicted value
        from pymc_bnn.metrics import binned_coverage

        bins = binned_coverage(y, pred["mean"], pred["lower"], pred["upper"])
        for lo, hi, cov in zip(bins["low"], bins["high"], bins["coverage"]):
            scores[f"coverage, predicted {format_number(lo)} to {format_number(hi)}"] = cov
    if threshold is not None:
        from pymc_bnn.estimators._decision import expected_cost, threshold_curves

        positive, p = y == est.classes_[1], pred["proba"][:, 1]
        at = threshold_curves(positive, p, [threshold])
        scores.update(
            {
                "cost_threshold": threshold,
                "precision_at_threshold": float(at["precision"][0]),
                "recall_at_threshold": float(at["recall"][0]),
                "expected_cost_at_threshold": expected_cost(positive, p, threshold, cost_fn_fp),
                "expected_cost_at_0.5": expected_cost(positive, p, 0.5, cost_fn_fp),
            }
        )
    return pipeline, meta, y, pred, scores


def predictive_nll(pipeline, meta, frame, y) -> float:
    """Mean negative log predictive density of the regression targets ``y`` of the rows
    of ``frame``: of the posterior's mixture (log-normal on the log scale), where the
    Normal of its mean and sd would misjudge a skewed predictive."""
    import numpy as np

    from pymc_bnn.cli._tables import by_group

    pre, est = pipeline.named_steps["preprocess"], pipeline.named_steps["model"]
    column = model_info(meta).get("groups")
    groups, seen = match_labels(frame[column].to_numpy(), est.groups_) if column else (None, None)
    Xy = np.column_stack([pre.transform(frame), y])  # y goes wherever its rows go

    def density(rows, groups=None):
        return est.log_predictive_density(rows[:, :-1], rows[:, -1], groups=groups)

    return float(-np.mean(by_group(density, Xy, groups, seen)))


def score_labels(interval: float) -> dict:
    """Names that say which interval a regression score is about."""
    name = interval_name(interval)
    return {
        "coverage": f"coverage of the {name}% interval",
        "mean_interval_width": f"mean width of the {name}% interval",
    }
