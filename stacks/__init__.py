"""CDK app for Batch Gateway: one construct per capability, composed by ``BatchGatewayStack``.

Imports nothing from ``lambdas`` or ``batch_gateway``'s runtime code, only ``batch_gateway.constants``.
"""
