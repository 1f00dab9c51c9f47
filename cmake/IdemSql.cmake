# idem_embed_sql(TARGET name...): compiles sql/<name>.sql into TARGET as idem::sql::<name> (a
# std::string_view), as idem_embed_lua does for lua/. Editing a file re-runs CMake.
function(idem_embed_sql target)
  set(IDEM_SQL_DEFINITIONS "")
  foreach(name IN LISTS ARGN)
    set(path "${PROJECT_SOURCE_DIR}/sql/${name}.sql")
    file(READ "${path}" source)
    string(APPEND IDEM_SQL_DEFINITIONS
           "extern const std::string_view ${name};\nconst std::string_view ${name} = R\"idem_sql(${source})idem_sql\";\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${path}")
  endforeach()
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}_sql.cpp")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/sqlsources.cpp.in" "${out}" @ONLY)
  target_sources(${target} PRIVATE "${out}")
endfunction()
