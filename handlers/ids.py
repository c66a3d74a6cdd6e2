"""The action and view ids rcabot's messages carry, shared by the renderer and the listeners."""

REPAIR = "rca_repair"
VERIFY = "rca_verify"
CORRECT = "rca_feedback_correct"
WRONG = "rca_feedback_wrong"
FEEDBACK_VIEW = "rca_feedback_view"
RESUME = "rca_resume"
