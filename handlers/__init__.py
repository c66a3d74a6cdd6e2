"""Thin Slack listeners: ack, parse, call, render."""
