#!/usr/bin/env python3
"""CDK entry point (``npx cdk synth`` / ``deploy``, see cdk.json); context keys are documented in stacks/config.py."""

from stacks.app_factory import build_app

build_app().synth()
