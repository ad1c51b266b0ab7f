"""The guardian spy's gRPC protocol and client, shared by the relayer's listener and the
streaming indexer (both subscribe to signed VAAs); it sits below both so neither reaches into
the other."""
