# Unity batches: a target's .cc files compiled a few at a time, each batch
# one translation unit (a generated file of `#include "<dir>/<file>.cc"`
# lines, build*/unity/<target>_<n>.cc). Most of a file's compile time is
# what every file repeats (the standard library's, Boost's, ONNX's and
# json's headers and the code generated for their templates), so a batch
# costs little more than its largest member.
#
#   tessera_unity_batches(target size)
#
# The includes are relative to the repository (found through its -I), so a
# batch's text is the same in every clone and ccache serves it to a clone
# at another path (CMake's own UNITY_BUILD writes absolute paths). Files
# outside the repository, generated files (under the build folder) and files
# that are not .cc are compiled alone, and a target with one eligible file
# is left as it is.
#
# Files that share a batch share its namespace scope, which is where unity
# builds go wrong: two files' helpers of one name either fail to compile
# or, worse, overload each other and a call in one file silently picks the
# other file's function. So no two files that declare a name in common go
# into one batch. The names are read off each file's lines that start in
# column 0 (clang-format leaves every namespace-scope declaration there):
# functions (the word before the first parenthesis, unless qualified as a
# member, Foo::Bar), classes, structs, unions and enums, aliases, `using`
# declarations, variables with an initializer, and macros. GoogleTest's
# macro calls (TEST, TEST_F, ...) and the words such a line may begin with
# (template, namespace, extern) are not names. A declaration whose name is
# on an indented continuation line is not seen: clang-format keeps a
# function's name on a line that starts in column 0, so what can be missed
# is a variable's or a type's, which fails to compile rather than
# overloading. Otherwise the rule errs towards separating files: a name
# in two different namespaces counts as the same name.
#
# Names come in three kinds. A file's own (Name): declared in the .cc and
# in none of the headers it includes, so a helper of that file; it clashes
# with every other declaration of Name. A header's (Name@h): declared in a
# repository header the file includes, directly or through other headers;
# headers are an API meant to be included together, so two headers'
# declarations do not clash, but a header's Name and another file's own
# Name do (the second file's call could pick the header's function once
# the batch includes it). An alias or `using` declaration
# (Name@=what-it-names in namespace): repeating the same one in the same
# namespace is harmless, anything else of that name clashes.
#
# Files are taken in the target's order and each goes into the first batch
# that has room and none of whose names clash with its own, so the batches
# are the same on every configure of the same sources.

# Sets `names` to the names declared at namespace scope in `path` (the
# kinds above, an alias as Name@=..., any other as Name) and `includes` to
# the repository files it includes.
function(_tessera_unity_scan path names includes)
  file(READ "${path}" text)
  # CMake's lists split on ';' and group on '[' ... ']': neither may reach
  # them. Nothing below needs those characters.
  string(REPLACE ";" " " text "${text}")
  string(REPLACE "[" "<" text "${text}")
  string(REPLACE "]" ">" text "${text}")
  string(REPLACE "\\" " " text "${text}")
  string(REGEX MATCHALL "\n[A-Za-z_#}][^\n]*" lines "\n${text}")
  set(ident "[A-Za-z_][A-Za-z0-9_]*")
  # Macro calls, not names: GoogleTest's.
  set(macro_call "^(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P|INSTANTIATE_[A-Z_]+|GTEST_[A-Z_]+|MATCHER[A-Z0-9_]*|ACTION[A-Z0-9_]*)$")
  set(found "")
  set(included "")
  # The namespaces around a line ({} for an anonymous one): an alias is the
  # same alias only in the same namespace (clang's -Wshadow warns when one
  # in an anonymous namespace repeats one of the namespace around it).
  set(scope "")
  foreach(line IN LISTS lines)
    string(SUBSTRING "${line}" 1 -1 line)
    set(name "")
    if(line MATCHES "^namespace +([A-Za-z0-9_:]+) *{")
      list(APPEND scope "${CMAKE_MATCH_1}")
      continue()
    elseif(line MATCHES "^namespace *{")
      list(APPEND scope "{}")
      continue()
    elseif(line MATCHES "^}  // namespace")
      if(scope)
        list(POP_BACK scope)
      endif()
      continue()
    elseif(line MATCHES "^}")
      continue()
    elseif(line MATCHES "^# *include +\"([^\"]+)\"")
      if(EXISTS "${PROJECT_SOURCE_DIR}/${CMAKE_MATCH_1}")
        list(APPEND included "${PROJECT_SOURCE_DIR}/${CMAKE_MATCH_1}")
      endif()
      continue()
    elseif(line MATCHES "^# *define +(${ident})")
      set(name "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^(namespace|using namespace|template|extern|return|#)")
      continue()
    elseif(line MATCHES "^(enum class|enum struct|struct|class|union|enum) +(${ident})")
      set(name "${CMAKE_MATCH_2}")
    elseif(line MATCHES "^using +(${ident}) *= *([^ ].*[^ ]) *$")
      string(JOIN "::" in ${scope})
      set(name "${CMAKE_MATCH_1}@=${CMAKE_MATCH_2} in ${in}")
    elseif(line MATCHES "^using +([A-Za-z0-9_:]*::(${ident})) *$")
      string(JOIN "::" in ${scope})
      set(name "${CMAKE_MATCH_2}@=${CMAKE_MATCH_1} in ${in}")
    elseif(line MATCHES "^([^(={]*[^A-Za-z0-9_:])?(${ident})\\(")
      set(name "${CMAKE_MATCH_2}")
      if(name MATCHES "${macro_call}")
        continue()
      endif()
    elseif(line MATCHES "^([^(={]*[^A-Za-z0-9_:])(${ident}) *(<[^>]*>)? *(=|{)")
      set(name "${CMAKE_MATCH_2}")
    endif()
    # (STREQUAL, not if(name): a name may read as false to CMake, like n.)
    if(NOT name STREQUAL "")
      list(APPEND found "${name}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES found)
  set(${names} "${found}" PARENT_SCOPE)
  set(${includes} "${included}" PARENT_SCOPE)
endfunction()

# Sets `out` to what a repository header and the repository headers it
# includes declare: Name@h, or an alias's Name@=... Each header is read
# once per configure (a global property holds its result).
function(_tessera_unity_header_names header out)
  string(MAKE_C_IDENTIFIER "${header}" key)
  get_property(known GLOBAL PROPERTY _tessera_unity_seen_${key} SET)
  if(known)
    get_property(result GLOBAL PROPERTY _tessera_unity_seen_${key})
    set(${out} "${result}" PARENT_SCOPE)
    return()
  endif()
  # Set before recursing: a cycle of includes ends here, empty.
  set_property(GLOBAL PROPERTY _tessera_unity_seen_${key} "")
  set_property(GLOBAL APPEND PROPERTY _tessera_unity_headers_read "${header}")
  _tessera_unity_scan("${header}" names includes)
  set(result "")
  foreach(name IN LISTS names)
    if(name MATCHES "@=")
      list(APPEND result "${name}")
    else()
      list(APPEND result "${name}@h")
    endif()
  endforeach()
  foreach(included IN LISTS includes)
    _tessera_unity_header_names("${included}" more)
    list(APPEND result ${more})
  endforeach()
  list(REMOVE_DUPLICATES result)
  set_property(GLOBAL PROPERTY _tessera_unity_seen_${key} "${result}")
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# Sets `<prefix>_own`, `<prefix>_headers` and `<prefix>_aliases` to the
# names of a .cc file by kind (above): its own names, its headers' names
# and aliases (the names alone) and its own aliases (Name@=...).
function(_tessera_unity_names path prefix)
  _tessera_unity_scan("${path}" own includes)
  set(from_headers "")
  foreach(included IN LISTS includes)
    _tessera_unity_header_names("${included}" more)
    list(APPEND from_headers ${more})
  endforeach()
  # A header's alias is a header's name like any other.
  set(headers ${from_headers})
  list(TRANSFORM headers REPLACE "@(h|=.*)$" "")
  list(REMOVE_DUPLICATES headers)
  set(aliases "")
  set(locals "")
  foreach(name IN LISTS own)
    if(name MATCHES "@=")
      list(APPEND aliases "${name}")
      continue()
    endif()
    # A definition of what a header declares is the header's name.
    list(FIND headers "${name}" in_header)
    if(in_header EQUAL -1)
      list(APPEND locals "${name}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES aliases)
  set(${prefix}_own "${locals}" PARENT_SCOPE)
  set(${prefix}_headers "${headers}" PARENT_SCOPE)
  set(${prefix}_aliases "${aliases}" PARENT_SCOPE)
endfunction()

# Sets `out` to TRUE when file `f`'s names clash with batch `b`'s (both
# prefixes of _tessera_unity_names's variables, in the caller's scope): an
# own name of either side declared in any way by the other, or one name
# aliased to two different things by the files themselves. Headers' names
# do not clash with each other, nor with a file's alias (where a header's
# type and an alias differ, the batch does not compile: the build says).
function(_tessera_unity_clash f b out)
  set(${out} TRUE PARENT_SCOPE)
  set(b_alias_names ${${b}_aliases})
  list(TRANSFORM b_alias_names REPLACE "@=.*" "")
  foreach(name IN LISTS ${f}_own)
    foreach(held IN ITEMS ${b}_own ${b}_headers b_alias_names)
      list(FIND ${held} "${name}" at)
      if(at GREATER -1)
        return()
      endif()
    endforeach()
  endforeach()
  if(${b}_own)
    # The batch's own names, as one alternation (names are identifiers:
    # nothing in them is special to a regular expression).
    string(REPLACE ";" "|" own_names "${${b}_own}")
    foreach(kind IN ITEMS headers aliases)
      set(hit ${${f}_${kind}})
      list(FILTER hit INCLUDE REGEX "^(${own_names})(@=.*)?$")
      if(hit)
        return()
      endif()
    endforeach()
  endif()
  foreach(alias IN LISTS ${f}_aliases)
    string(REGEX REPLACE "@=.*" "" name "${alias}")
    set(same ${${b}_aliases})
    list(FILTER same INCLUDE REGEX "^${name}@=")
    list(REMOVE_ITEM same "${alias}")
    if(same)
      return()
    endif()
  endforeach()
  set(${out} FALSE PARENT_SCOPE)
endfunction()

# Sets `out` to the batches of `files` (absolute paths, in order), at most
# `size` files each: one list element a batch, its files repository-relative
# and separated by commas.
function(_tessera_unity_group files size out)
  # First fit: batch i holds batch_<i>_files, whose names are batch_<i>_own,
  # batch_<i>_headers and batch_<i>_aliases.
  set(batches 0)
  foreach(absolute IN LISTS files)
    _tessera_unity_names("${absolute}" file)
    cmake_path(RELATIVE_PATH absolute BASE_DIRECTORY "${PROJECT_SOURCE_DIR}"
               OUTPUT_VARIABLE relative)
    set(placed FALSE)
    set(i 0)
    while(i LESS batches)
      list(LENGTH batch_${i}_files held)
      if(held LESS size)
        _tessera_unity_clash(file batch_${i} clash)
        if(NOT clash)
          set(placed TRUE)
          break()
        endif()
      endif()
      math(EXPR i "${i} + 1")
    endwhile()
    if(NOT placed)
      set(i ${batches})
      foreach(part IN ITEMS files own headers aliases)
        set(batch_${i}_${part} "")
      endforeach()
      math(EXPR batches "${batches} + 1")
    endif()
    list(APPEND batch_${i}_files "${relative}")
    foreach(part IN ITEMS own headers aliases)
      list(APPEND batch_${i}_${part} ${file_${part}})
      list(REMOVE_DUPLICATES batch_${i}_${part})
    endforeach()
  endforeach()
  set(result "")
  set(i 0)
  while(i LESS batches)
    string(REPLACE ";" "," batch "${batch_${i}_files}")
    list(APPEND result "${batch}")
    math(EXPR i "${i} + 1")
  endwhile()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

function(tessera_unity_batches target size)
  get_target_property(sources ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  set(kept "")
  set(batched "")
  foreach(source IN LISTS sources)
    cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${dir}" NORMALIZE
               OUTPUT_VARIABLE absolute)
    cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${absolute}" NORMALIZE inside)
    # A build folder may sit inside the repository: what it holds is
    # generated (console/assets_data.cc), perhaps not yet, so it is
    # compiled alone.
    cmake_path(IS_PREFIX CMAKE_BINARY_DIR "${absolute}" NORMALIZE generated)
    cmake_path(GET absolute FILENAME name)
    if(NOT inside OR generated OR NOT name MATCHES "\\.cc$")
      list(APPEND kept "${source}")
    else()
      list(APPEND batched "${absolute}")
    endif()
  endforeach()
  list(LENGTH batched count)
  if(count LESS 2)
    return()
  endif()
  _tessera_unity_group("${batched}" ${size} batches)
  # The batches follow the files' names, so an edit of a file or of a header
  # it includes configures again (a second or two) and the batches are
  # recomputed before anything compiles: a new helper that clashes moves
  # its file to another batch instead of into a silent overload.
  # (Each header once: the list read since the last target is emptied.)
  get_property(headers GLOBAL PROPERTY _tessera_unity_headers_read)
  set_property(GLOBAL PROPERTY _tessera_unity_headers_read "")
  set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY
               CMAKE_CONFIGURE_DEPENDS ${batched} ${headers})
  set(units "")
  set(i 0)
  foreach(batch IN LISTS batches)
    set(text "// Generated by cmake/TesseraUnity.cmake for ${target}: do not edit.\n")
    string(REPLACE "," ";" members "${batch}")
    foreach(member IN LISTS members)
      string(APPEND text "#include \"${member}\"\n")
    endforeach()
    set(unit "${CMAKE_BINARY_DIR}/unity/${target}_${i}.cc")
    # Written only when its text changes, so that ninja rebuilds no more
    # than the batches whose files changed.
    file(CONFIGURE OUTPUT "${unit}" CONTENT "${text}" @ONLY)
    list(APPEND units "${unit}")
    math(EXPR i "${i} + 1")
  endforeach()
  set_property(TARGET ${target} PROPERTY SOURCES ${kept} ${units})
  # GCC warns when a type declared in an included file has a member of a
  # type from an anonymous namespace: in a batch every file is included.
  target_compile_options(${target} PRIVATE
    $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
endfunction()
