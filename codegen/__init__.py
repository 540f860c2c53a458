"""Code generation from proto/ (run through ``make gen``): the local protoc plugin of the record field tables."""
