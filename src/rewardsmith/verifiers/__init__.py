"""Verifiable rewards: checked by code on the CPU, no model involved."""
