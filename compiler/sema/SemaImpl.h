// Internal to sema: the values names evaluate to, scopes, and the Sema class split over
// SemaModule.cpp (top level, imports, kernels), SemaExpr.cpp, SemaBuiltins.cpp, SemaMacros.cpp,
// SemaStmt.cpp and SemaOps.cpp.
#pragma once

#include "sema/Sema.h"
#include "tileir/Arith.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace tilec::sema {

struct ModuleScope;

struct ExprVal {
  tile::Expr expr;
};
struct DTypeVal {
  DType type;
};
struct StrVal {
  std::string value;
};
/// `dynamic("m")` (TileLang's T.dynamic / T.symbolic): a symbolic dimension named `name`,
/// bound at launch, for a constant to hold until a tensor shape names it.
struct DimVal {
  std::string name;
};
struct PolicyVal {
  tile::GemmPolicy policy;
};
struct BufferVal {
  tile::BufferPtr buffer;
};
struct MacroVal {
  const ast::FuncDef *def;
  const ModuleScope *scope;
};
struct ModuleVal {
  const ModuleScope *scope;
};
/// A builtin function or namespace name: `copy`, `T`, `GemmWarpPolicy`, `Parallel`, ...
struct BuiltinVal {
  std::string name;
};
struct TupleVal;
struct DictVal;
using Value =
    std::variant<ExprVal, DTypeVal, StrVal, DimVal, PolicyVal, BufferVal, MacroVal, ModuleVal,
                 BuiltinVal, std::shared_ptr<TupleVal>, std::shared_ptr<DictVal>>;
struct TupleVal {
  std::vector<Value> elts;
};
struct DictVal {
  std::vector<std::pair<Value, Value>> entries;
};

/// A call's positional and keyword arguments mapped onto named parameters.
struct BoundArgs {
  std::vector<const ast::Expr *> args; // by parameter position; null when absent
  const ast::Expr *get(size_t i) const { return i < args.size() ? args[i] : nullptr; }
};
/// Reports unknown, duplicate, surplus and missing (the first `required`) arguments.
std::optional<BoundArgs> bindArgs(DiagnosticEngine &diags, const std::string &fn,
                                  const ast::Expr &e, const ast::Call &c,
                                  const std::vector<std::string> &params, size_t required);
std::string shapeText(const std::vector<tile::Expr> &shape);

/// The names a module defines: constants (already evaluated), macros, kernels and imports.
/// `[A-Za-z_][A-Za-z0-9_]*`: a name C++ and the generated header can use (a kernel's symbol, a
/// launch argument).
bool isIdentifier(const std::string &s);
/// Names that resolve to a builtin: the tile operations and the other builtins.
bool isBuiltin(const std::string &n);

struct ModuleScope {
  std::string name; // dotted module name, empty for the main file
  std::map<std::string, Value> names;
  std::map<std::string, SourceLoc> defLocs;
  /// Constants whose declaration was rejected (and reported): their uses report nothing more.
  std::set<std::string> failed;
  std::vector<const ast::FuncDef *> kernels;
};

/// A name binding inside a kernel body or macro expansion.
struct LocalScope {
  std::map<std::string, Value> names;
  LocalScope *parent = nullptr;
  const ModuleScope *module = nullptr;
  /// Pure-expression macro bodies bind locals by substitution and may not emit statements.
  bool exprMacro = false;
};

/// A macro body is checked where it is expanded: expanded inside a Parallel loop, what a
/// Parallel body may not contain (tile operations, nested Parallel loops) stays forbidden in it.
inline void inheritParallel(LocalScope &macroScope, const LocalScope &callSite) {
  for (const LocalScope *sc = &callSite; sc; sc = sc->parent)
    if (sc->names.count("<parallel>")) {
      macroScope.names["<parallel>"] = BuiltinVal{"<parallel>"};
      return;
    }
}

class Sema {
public:
  Sema(SourceManager &sm, DiagnosticEngine &diags, const Options &opts)
      : sm_(sm), diags_(diags), opts_(opts) {}
  std::optional<tile::Program> run(const ast::Module &main);

private:
  // ---- SemaModule.cpp
  bool loadModule(const ast::Module &m, ModuleScope &scope);
  const ModuleScope *importModule(const std::vector<std::string> &path, SourceLoc loc);
  void defineConst(const ast::ConstDecl &c, ModuleScope &scope);
  std::optional<Value> parseDefine(const std::string &name, const std::string &text, SourceLoc loc);
  std::optional<tile::Kernel> analyzeKernel(const ast::FuncDef &def, const ModuleScope &scope);
  /// @tune(space="...", shapes="..."): both string literals, kept as written.
  std::optional<tile::TuneDecl> tuneDecl(const ast::Decorator &d);
  bool analyzeParam(const ast::Param &p, tile::Kernel &k, LocalScope &scope);
  void warnComputedOnlyDims(const tile::Kernel &k, const LocalScope &scope);

  // ---- SemaExpr.cpp
  std::optional<Value> eval(const ast::Expr &e, LocalScope &scope);
  tile::Expr evalScalar(const ast::Expr &e, LocalScope &scope, const char *what = "a value");
  tile::Expr evalInt(const ast::Expr &e, LocalScope &scope, const char *what);
  std::optional<int64_t> evalConstInt(const ast::Expr &e, LocalScope &scope, const char *what);
  std::optional<DType> evalDType(const ast::Expr &e, LocalScope &scope);
  std::optional<Value> lookup(const std::string &name, LocalScope &scope, SourceLoc loc);
  std::optional<Value> evalAttribute(const ast::Expr &e, const ast::Attribute &a,
                                     LocalScope &scope);
  std::optional<Value> evalSubscript(const ast::Expr &e, const ast::Subscript &s,
                                     LocalScope &scope);
  std::optional<Value> evalCall(const ast::Expr &e, const ast::Call &c, LocalScope &scope);
  std::optional<Value> evalBuiltinCall(const std::string &name, const ast::Expr &e,
                                       const ast::Call &c, LocalScope &scope);
  /// Expansion of `m` called at `loc`, up to its body: checks the expansion depth and count,
  /// and binds the call's arguments in a new scope for the body. A macro called as a statement
  /// takes all its arguments positionally.
  std::optional<LocalScope> bindMacroCall(const MacroVal &m, const ast::Call &c, LocalScope &scope,
                                          SourceLoc loc, bool asStatement);
  std::optional<Value> expandMacro(const MacroVal &m, const ast::Expr &e, const ast::Call &c,
                                   LocalScope &scope);
  tile::Expr binary(ast::BinaryOp op, tile::Expr a, tile::Expr b, SourceLoc loc);
  tile::Expr toScalar(const Value &v, SourceLoc loc, const char *what);

  // ---- SemaStmt.cpp
  /// With `ends`, records out.size() after each statement of `b` (which tile statements each
  /// source statement became).
  void analyzeBlock(const ast::Block &b, LocalScope &scope, tile::Body &out,
                    std::vector<size_t> *ends = nullptr);
  /// Checks a Pipelined loop's order=/stage= against the schedule tilec makes (issued copies
  /// first, the rest in order one stage later, or no pipelining at all) and applies it.
  void checkSchedule(const ast::For &f, const std::vector<size_t> &ends, tile::For &loop);
  void analyzeStmt(const ast::Stmt &s, LocalScope &scope, tile::Body &out);
  void analyzeAssign(const ast::Stmt &s, const ast::Expr &target, tile::Expr value,
                     LocalScope &scope, tile::Body &out);
  void analyzeFor(const ast::Stmt &s, const ast::For &f, LocalScope &scope, tile::Body &out);
  /// A builtin called as a statement: a tile operation (dispatched through tileOps()) or an
  /// expression builtin whose value would be thrown away.
  void analyzeOpCall(const std::string &name, const ast::Expr &e, const ast::Call &c,
                     LocalScope &scope, tile::Body &out);
  // ---- SemaOps.cpp: one member per tile operation, each registered in tileOps()
public:
  using OpAnalysis = void (Sema::*)(const std::string &name, const ast::Expr &e, const ast::Call &c,
                                    LocalScope &scope, tile::Body &out);
  void analyzeCopy(const std::string &name, const ast::Expr &e, const ast::Call &c,
                   LocalScope &scope, tile::Body &out);
  void analyzeFill(const std::string &name, const ast::Expr &e, const ast::Call &c,
                   LocalScope &scope, tile::Body &out);
  void analyzeGemm(const std::string &name, const ast::Expr &e, const ast::Call &c,
                   LocalScope &scope, tile::Body &out);
  void analyzeReduce(const std::string &name, const ast::Expr &e, const ast::Call &c,
                     LocalScope &scope, tile::Body &out);
  void analyzeCumsum(const std::string &name, const ast::Expr &e, const ast::Call &c,
                     LocalScope &scope, tile::Body &out);
  void analyzeAtomic(const std::string &name, const ast::Expr &e, const ast::Call &c,
                     LocalScope &scope, tile::Body &out);
  void analyzeUseSwizzle(const std::string &name, const ast::Expr &e, const ast::Call &c,
                         LocalScope &scope, tile::Body &out);
  void analyzeAnnotateLayout(const std::string &name, const ast::Expr &e, const ast::Call &c,
                             LocalScope &scope, tile::Body &out);
  void analyzeSyncThreads(const std::string &name, const ast::Expr &e, const ast::Call &c,
                          LocalScope &scope, tile::Body &out);
  /// The kernel's var for thread_id(), lane_id() or warp_id(), made at its first use.
  tile::VarPtr threadIndexVar(tile::ThreadIndexKind kind, SourceLoc loc);
  void analyzePrint(const std::string &name, const ast::Expr &e, const ast::Call &c,
                    LocalScope &scope, tile::Body &out);

private:
  /// A keyword argument that must be a constant True or False (`dflt` when absent).
  std::optional<bool> constBool(LocalScope &scope, const ast::Expr *x, bool dflt, const char *what);
  std::optional<tile::BufferPtr> allocate(const std::string &name, SourceLoc nameLoc,
                                          const std::string &fn, const ast::Expr &e,
                                          const ast::Call &c, LocalScope &scope);
  /// A tile operand: a buffer, `buf[corner...]` (extent from the other operand) or a sliced region.
  std::optional<tile::Region> evalRegion(const ast::Expr &e, LocalScope &scope, bool &corner);
  bool completeRegions(tile::Region &a, bool cornerA, tile::Region &b, bool cornerB, SourceLoc loc);
  bool checkSameShape(const tile::Region &a, const tile::Region &b, SourceLoc loc, const char *op);
  tile::VarPtr newVar(std::string name, DType t, tile::VarKind kind, SourceLoc loc, int index = 0);
  tile::BufferPtr findBufferAssignedVar(const std::string &name, LocalScope &scope);

  SourceManager &sm_;
  DiagnosticEngine &diags_;
  const Options &opts_;
  std::vector<std::unique_ptr<ModuleScope>> modules_;
  std::vector<std::unique_ptr<ast::Module>> importedAsts_;
  std::map<std::string, const ModuleScope *> moduleByName_;
  std::vector<std::string> importStack_;
  std::map<std::string, bool> usedDefines_;

  // Per-kernel state.
  tile::Kernel *kernel_ = nullptr;
  int nextVarId_ = 0;
  int nextBufferId_ = 0;
  int macroDepth_ = 0;
  int loopDepth_ = 0;
  /// Macro expansions so far in the whole program: bounds macros that call others several
  /// times, whose expansion grows exponentially with the nesting.
  int macroExpansions_ = 0;
  static constexpr int kMaxMacroExpansions = 10000;
  /// Counts one expansion; reports the error when the limit is first passed.
  bool countMacroExpansion(const std::string &name, SourceLoc loc);
  /// Product of the trip counts of the enclosing unroll loops.
  int64_t unrollCopies_ = 1;
  static constexpr int64_t kMaxUnrolledCopies = 65536;
};

/// A tile operation as sema sees it, registered in tileOps() (SemaOps.cpp): its name, the
/// member that checks a call of it and appends its statement, and whether a Parallel loop's
/// body may call it (an operation on one element per iteration).
struct TileOpInfo {
  std::string_view name;
  Sema::OpAnalysis analyze;
  bool inParallel = false;
};
const std::vector<TileOpInfo> &tileOps();
const TileOpInfo *findTileOp(std::string_view name);
/// Whether `scope` is (inside) the body of a Parallel loop.
bool insideParallel(const LocalScope &scope);

} // namespace tilec::sema
