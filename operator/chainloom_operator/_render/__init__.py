"""Pure renderers: a custom resource's spec in, manifests (and reconcile plans) out as data.

Nothing here talks to Kubernetes or a database, so every function is tested as data
(``tests/unit/operator``) and the kopf handlers only apply what these return. An import-linter
contract keeps kopf, the Kubernetes client (lightkube) and the database clients out of this
package.
"""
