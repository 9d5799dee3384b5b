"""Runs the SAM transform of a template, as `sam deploy` has CloudFormation
do, and prints the resulting resource types as JSON; exits 1 on any error.

Usage: python3 transform.py template.yaml
"""
import json
import sys

from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    """The template names no AWS managed policy by name, so none is looked up."""

    def load(self):
        return {}


def package(template):
    """Points each function's local CodeUri at an artifact, as `sam package`
    does after `sam build` before CloudFormation sees the template."""
    for name, r in template.get("Resources", {}).items():
        if r.get("Type") == "AWS::Serverless::Function":
            r["Properties"]["CodeUri"] = f"s3://oracle-artifacts/{name}.zip"


def main(path):
    with open(path, encoding="utf-8") as f:
        template = yaml_parse(f.read())
    package(template)
    try:
        out = transform(template, {}, NoManagedPolicies())
    except InvalidDocumentException as e:
        for cause in e.causes:
            print(f"transform: {cause.message}", file=sys.stderr)
        return 1
    types = {name: r["Type"] for name, r in out["Resources"].items()}
    json.dump(types, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
