// Package encoding is the wire format of the API, both ways, as
// kube-apiserver's runtime serializers and endpoints/handlers/negotiation
// and responsewriters are: request bodies in (JSON, protobuf for built-in
// kinds, the fieldValidation checks of unknown and duplicate fields) and
// responses out (objects and lists from their ready bytes, lists streamed
// as the store reads them, watch events, meta.k8s.io Tables with
// PartialObjectMetadata rows). It decides nothing about objects: what is
// stored is the handlers' and the pipeline's business.
package encoding
