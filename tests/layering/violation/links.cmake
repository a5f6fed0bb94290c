# The links tessera_write_component_links would write for a tree that breaks
# each link rule of check_layering.cmake: service/ links the server above it
# (rule 1) and split/ without including it (rule 2); k8s/ links http/
# without including it (rule 2) and gets the server through the service,
# unused (rule 3), and split/ too (passed as a known violation, beside a
# known one that no longer fails); k8s/, passed as lean, gets yaml-cpp
# (passed as heavy) through the service (rule 4).
set(component_of_tessera_service service)
set(component_of_tessera_k8s k8s)
set(component_of_tessera_server server)
set(component_of_tessera_http http)
set(component_of_tessera_split split)
set(component_targets tessera_service tessera_k8s tessera_server tessera_http
                      tessera_split)
set(links_of_tessera_service "tessera_server|PUBLIC|server"
                             "tessera_split|PRIVATE|split" "yaml-cpp|PRIVATE|")
set(links_of_tessera_k8s "tessera_service|PUBLIC|service"
                         "tessera_http|PRIVATE|http")
set(links_of_tessera_server "")
set(links_of_tessera_http "")
set(links_of_tessera_split "")
