#ifndef TESSERA_PLACER_MIP_H_
#define TESSERA_PLACER_MIP_H_

// A mixed-integer program for CBC through its C interface: columns and
// rows added one by one. CBC's C interface runs the standalone solver
// (CbcMain1), which keeps global state: hold CbcMutex() while a model is
// built and solved (one model at a time per process).

#include <coin/Cbc_C_Interface.h>

#include <mutex>
#include <string>
#include <vector>

namespace tessera::placer {

std::mutex& CbcMutex();

class Mip {
 public:
  Mip() : m_(Cbc_newModel()) {}
  ~Mip() { Cbc_deleteModel(m_); }
  Mip(const Mip&) = delete;
  Mip& operator=(const Mip&) = delete;

  // Columns are named c0, c1, ...: CBC matches a MIP start to columns by
  // name, so unnamed columns make every start unusable.
  int AddCol(double lb, double ub, double obj, bool integer) {
    const std::string name = "c" + std::to_string(cols_);
    Cbc_addCol(m_, name.c_str(), lb, ub, obj, integer ? 1 : 0, 0, nullptr,
               nullptr);
    return cols_++;
  }
  // sense: 'L' (<=), 'G' (>=), 'E' (=).
  void AddRow(const std::vector<int>& cols, const std::vector<double>& coefs,
              char sense, double rhs) {
    Cbc_addRow(m_, "", static_cast<int>(cols.size()), cols.data(), coefs.data(),
               sense, rhs);
  }
  int cols() const { return cols_; }
  Cbc_Model* get() { return m_; }

 private:
  Cbc_Model* m_;
  int cols_ = 0;
};

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_MIP_H_
