#include "graph/graph.h"

namespace tessera::graph {

std::string_view DataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kUint8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kUint16:
      return "uint16";
    case DataType::kInt16:
      return "int16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kString:
      return "string";
    case DataType::kBool:
      return "bool";
    case DataType::kFloat16:
      return "float16";
    case DataType::kFloat64:
      return "float64";
    case DataType::kUint32:
      return "uint32";
    case DataType::kUint64:
      return "uint64";
    case DataType::kComplex64:
      return "complex64";
    case DataType::kComplex128:
      return "complex128";
    case DataType::kBfloat16:
      return "bfloat16";
    case DataType::kUndefined:
      break;
  }
  return "undefined";
}

int DataTypeBits(DataType type) {
  switch (type) {
    case DataType::kBool:
    case DataType::kUint8:
    case DataType::kInt8:
      return 8;
    case DataType::kUint16:
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return 16;
    case DataType::kFloat32:
    case DataType::kInt32:
    case DataType::kUint32:
      return 32;
    case DataType::kFloat64:
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kComplex64:
      return 64;
    case DataType::kComplex128:
      return 128;
    case DataType::kString:
    case DataType::kUndefined:
      break;
  }
  return 0;
}

bool IsFloat(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kBfloat16 ||
         type == DataType::kFloat32 || type == DataType::kFloat64;
}

Result<DataType> ParseFloatType(std::string_view text) {
  if (text == "fp32" || text == "float32") return DataType::kFloat32;
  if (text == "fp16" || text == "float16") return DataType::kFloat16;
  if (text == "bf16" || text == "bfloat16") return DataType::kBfloat16;
  return BadInput("float_type '" + std::string(text) +
                  "': expected fp32, fp16 or bf16");
}

DataType DataTypeFromOnnx(int32_t code) {
  if (code < 0 || code > static_cast<int32_t>(DataType::kBfloat16)) {
    return DataType::kUndefined;
  }
  return static_cast<DataType>(code);
}

}  // namespace tessera::graph
