package io.e2a.v1.json;

import io.e2a.v1.JsonKind;
import java.util.List;

/**
 * One field of a record's table (RecordFields, generated from the schema's (e2a.v1.json) options
 * by codegen/e2a_tables.py): WireReader and WireWriter loop over the tables, reading and writing
 * each field by its kind, or by the legacy reader the schema names.
 *
 * @param name the field's wire JSON key
 * @param number the protobuf field number
 * @param kind its JSON kind
 * @param def the value of an absent key (an enum's json_value); "" is the kind's own default
 * @param enumValues the json_value of each value of an enum field's type
 * @param legacy the legacy reader of the field, or null
 * @param internalKeys members of a fallback object never merged into the field
 */
record FieldSpec(
    String name,
    int number,
    JsonKind kind,
    String def,
    List<EnumValue> enumValues,
    LegacyReader legacy,
    List<String> internalKeys) {

  /** The wire JSON string of an enum value. */
  record EnumValue(String name, int number) {}

  /** Reads a field from the whole document: its value for the message, or null to leave it unset. */
  @FunctionalInterface
  interface LegacyReader {
    Object read(WireReader reader, FieldSpec field);
  }
}
