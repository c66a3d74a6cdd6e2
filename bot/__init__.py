"""The application: the `rcabot` command line and, later, the Slack app."""
