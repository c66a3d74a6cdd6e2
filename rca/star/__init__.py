"""STAR: stage-attributed audit (and, later, repair) of a four-stage RCA trace."""
