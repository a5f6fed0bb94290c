# The unity batching of cmake/TesseraUnity.cmake on the files of fixture/:
# which files may share a batch, which may not, and the batches' order and
# size.
#
#   cmake -DMODULE=cmake/TesseraUnity.cmake -DROOT=tests/unity/fixture \
#         -P tests/unity/check_unity.cmake
set(PROJECT_SOURCE_DIR "${ROOT}")
include("${MODULE}")

set(failures 0)
# Groups `files` (names under ROOT) `size` at a time; the batches, each
# written "a.cc,b.cc" and separated by ";", must read `expected`.
function(expect_batches size expected)
  set(files "")
  foreach(name IN LISTS ARGN)
    list(APPEND files "${ROOT}/${name}")
  endforeach()
  _tessera_unity_group("${files}" ${size} batches)
  if(NOT batches STREQUAL expected)
    message(SEND_ERROR "${ARGN} in batches of ${size}: got '${batches}', "
            "expected '${expected}'")
  endif()
endfunction()

# Kept apart: two files' helpers of one name (the overload that would be
# picked silently), a file's own name and a header's another file includes,
# one alias in two namespaces, and a name declared as two kinds of thing.
expect_batches(8 "helper_int.cc;helper_double.cc" helper_int.cc helper_double.cc)
expect_batches(8 "score_impl.cc;weight_local.cc" score_impl.cc weight_local.cc)
expect_batches(8 "weight_local.cc;score_user.cc" weight_local.cc score_user.cc)
expect_batches(8 "alias_named.cc;alias_anonymous.cc" alias_named.cc alias_anonymous.cc)
expect_batches(8 "kinds.cc;kinds_enum.cc" kinds.cc kinds_enum.cc)
expect_batches(8 "kinds.cc;kinds_const.cc" kinds.cc kinds_const.cc)
expect_batches(8 "kinds.cc;kinds_template.cc" kinds.cc kinds_template.cc)
expect_batches(8 "kinds.cc;kinds_wrapped.cc" kinds.cc kinds_wrapped.cc)
expect_batches(8 "kinds.cc;kinds_macro.cc" kinds.cc kinds_macro.cc)

# Together: the definition and a user of one header's names, one alias
# repeated in one namespace, GoogleTest's macros, unrelated files.
expect_batches(8 "score_impl.cc,score_user.cc" score_impl.cc score_user.cc)
expect_batches(8 "alias_named.cc,alias_named_again.cc" alias_named.cc alias_named_again.cc)
expect_batches(8 "test_one.cc,test_two.cc" test_one.cc test_two.cc)
expect_batches(8 "helper_int.cc,score_user.cc,kinds.cc" helper_int.cc score_user.cc kinds.cc)

# First fit in the given order, at most `size` files a batch.
expect_batches(8 "helper_int.cc,score_user.cc;helper_double.cc"
               helper_int.cc helper_double.cc score_user.cc)
expect_batches(2 "helper_int.cc,score_user.cc;alias_named.cc"
               helper_int.cc score_user.cc alias_named.cc)
