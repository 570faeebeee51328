#!/usr/bin/env bash
# The admission webhook's serving certificate without cert-manager (docs/admission.md#without-cert-manager).
# Run after `kubectl apply -k` of an install with components/admission, with kubectl pointed at
# the cluster; run it again to renew (before the serving certificate's 1 year runs out: the
# controller warns 14 days ahead). Needs bash, openssl and kubectl.
#
# Each run makes a fresh private CA, issues an ECDSA P-256 serving certificate for
# <service>.<namespace>.svc from it into the Secret the controller mounts
# (agent-controller-admission-tls: tls.crt, tls.key, ca.crt), sets the webhook configuration's
# caBundle to the new CA together with the one the current certificate was issued by (so the
# certificate still being served stays trusted while the kubelet swaps the files), and throws the
# CA's private key away: it is never written to the cluster, so no Secret in the namespace can
# sign a certificate the API server trusts. A Secret agent-admission-ca an earlier version of
# this script left (holding that key) is deleted.
set -euo pipefail

namespace=ai-agents
service=agent-controller-admission
webhook=agent-controller-admission
days=365
kubectl_args=()

usage() {
  cat <<USAGE
usage: $0 [--namespace NS] [--service NAME] [--webhook NAME] [--days N] [--context CTX] [--kubeconfig FILE]
  --namespace   the controller's namespace (default ai-agents)
  --service     the webhook's Service (default agent-controller-admission)
  --webhook     the ValidatingWebhookConfiguration (default agent-controller-admission)
  --days        the serving certificate's lifetime (default 365)
USAGE
}

while [ $# -gt 0 ]; do
  # --flag=value as --flag value
  if [[ "$1" == --*=* ]]; then
    set -- "${1%%=*}" "${1#*=}" "${@:2}"
  fi
  case "$1" in
    --namespace) namespace=$2; shift 2 ;;
    --service) service=$2; shift 2 ;;
    --webhook) webhook=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --context | --kubeconfig) kubectl_args+=("$1=$2"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "error: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done

fail() { echo "error: $*" >&2; exit 1; }
k() { kubectl "${kubectl_args[@]}" "$@"; }
# Secrets are written with a server-side apply: a client-side one would copy the private key into
# the Secret's last-applied-configuration annotation.

command -v openssl >/dev/null || fail "openssl is not installed"
command -v kubectl >/dev/null || fail "kubectl is not installed"
[[ "$days" =~ ^[1-9][0-9]*$ ]] || fail "--days must be a whole number of days, got: $days"
k version --request-timeout=10s >/dev/null 2>&1 || fail "kubectl cannot reach the cluster (check --context/--kubeconfig): $(k version --request-timeout=10s 2>&1 | tail -1)"
k get namespace "$namespace" >/dev/null 2>&1 ||
  fail "namespace $namespace not found: apply the install first (kubectl apply -k, docs/install.md)"
k get validatingwebhookconfiguration "$webhook" >/dev/null 2>&1 ||
  fail "ValidatingWebhookConfiguration $webhook not found: the install lacks components/admission"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
host="$service.$namespace.svc"

# The CA the certificate being served was issued by: the first in the current caBundle (this
# script writes its CA first). Kept in the bundle until the next run; only certificates, no key.
old_ca=""
if k get validatingwebhookconfiguration "$webhook" -o jsonpath='{.webhooks[0].clientConfig.caBundle}' |
  base64 -d >previous-bundle.crt 2>/dev/null && [ -s previous-bundle.crt ] &&
  openssl x509 -in previous-bundle.crt -out old-ca.crt 2>/dev/null &&
  openssl x509 -in old-ca.crt -noout -checkend 0 >/dev/null; then
  old_ca=old-ca.crt
fi

# A fresh CA, living only in this temporary directory; it outlasts the serving certificate a little.
openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout ca.key -out ca.crt \
  -days $((days + 30)) -subj "/CN=agent-admission-ca" \
  -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
echo "created a new CA for this certificate; its private key is not kept (never written to the cluster)"

# An earlier version kept the CA's private key in the namespace: remove it.
if k -n "$namespace" get secret agent-admission-ca >/dev/null 2>&1; then
  k -n "$namespace" delete secret agent-admission-ca >/dev/null
  echo "deleted Secret $namespace/agent-admission-ca, which held an earlier CA's private key"
fi

# The serving certificate for the Service's DNS names.
openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout tls.key -out tls.csr \
  -subj "/CN=$host" 2>/dev/null
printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:%s,DNS:%s.cluster.local\n' \
  "$host" "$host" >ext.cnf
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" -extfile ext.cnf -out tls.crt 2>/dev/null
rm -f ca.key
cat ca.crt ${old_ca:+"$old_ca"} >bundle.crt

# The caBundle first, so the API server trusts the new certificate before the controller serves it.
k patch validatingwebhookconfiguration "$webhook" --type=json \
  -p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$(base64 -w0 bundle.crt)\"}]" >/dev/null
# A kubernetes.io/tls Secret with ca.crt, as cert-manager writes it.
cat >secret.yaml <<SECRET
apiVersion: v1
kind: Secret
metadata:
  name: agent-controller-admission-tls
  namespace: $namespace
type: kubernetes.io/tls
data:
  tls.crt: $(base64 -w0 tls.crt)
  tls.key: $(base64 -w0 tls.key)
  ca.crt: $(base64 -w0 bundle.crt)
SECRET
k apply --server-side --force-conflicts --field-manager=issue-certificate -f secret.yaml >/dev/null
echo "issued the webhook's serving certificate for $host (valid until $(openssl x509 -in tls.crt -noout -enddate | cut -d= -f2)) into Secret $namespace/agent-controller-admission-tls; caBundle of $webhook set"
