"""Generated protobuf code; import it only through remote_core.protocol."""
