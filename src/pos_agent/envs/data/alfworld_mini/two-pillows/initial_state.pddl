;; alfworld-mini: two-pillows (living room)
;; Two pillows on two different armchairs must both end up on the sofa; one trip per pillow.
;; Display names: ArmChair_bar_2 = armchair 1, ArmChair_bar_1 = armchair 2, CoffeeTable_bar_1 = coffeetable 1, Drawer_bar_2 = drawer 1, Drawer_bar_1 = drawer 2, GarbageCan_bar_1 = garbagecan 1, Shelf_bar_1 = shelf 1, SideTable_bar_2 = sidetable 1, SideTable_bar_1 = sidetable 2, Sofa_bar_1 = sofa 1, TVStand_bar_1 = tvstand 1
;;                Pillow_bar_2 = pillow 1, Pillow_bar_1 = pillow 2, RemoteControl_bar_1 = remotecontrol 1, Newspaper_bar_1 = newspaper 1, Laptop_bar_1 = laptop 1, Box_bar_1 = box 1, KeyChain_bar_1 = keychain 1, CreditCard_bar_1 = creditcard 1, TissueBox_bar_1 = tissuebox 1, Statue_bar_1 = statue 1
(define (problem two_pillows)
    (:domain alfred)
    (:objects
        agent1 - agent
        BoxType - otype
        ButterKnifeType - otype
        CreditCardType - otype
        KeyChainType - otype
        KnifeType - otype
        LaptopType - otype
        NewspaperType - otype
        PillowType - otype
        RemoteControlType - otype
        StatueType - otype
        TissueBoxType - otype
        ArmChairType - rtype
        CoffeeTableType - rtype
        DrawerType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        MicrowaveType - rtype
        ShelfType - rtype
        SideTableType - rtype
        SinkBasinType - rtype
        SofaType - rtype
        TVStandType - rtype
        Pillow_bar_2 - object
        Pillow_bar_1 - object
        RemoteControl_bar_1 - object
        Newspaper_bar_1 - object
        Laptop_bar_1 - object
        Box_bar_1 - object
        KeyChain_bar_1 - object
        CreditCard_bar_1 - object
        TissueBox_bar_1 - object
        Statue_bar_1 - object
        ArmChair_bar_2 - receptacle
        ArmChair_bar_1 - receptacle
        CoffeeTable_bar_1 - receptacle
        Drawer_bar_2 - receptacle
        Drawer_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        Shelf_bar_1 - receptacle
        SideTable_bar_2 - receptacle
        SideTable_bar_1 - receptacle
        Sofa_bar_1 - receptacle
        TVStand_bar_1 - receptacle
        loc_bar_0 - location
        loc_bar_1 - location
        loc_bar_2 - location
        loc_bar_3 - location
        loc_bar_4 - location
        loc_bar_5 - location
        loc_bar_6 - location
        loc_bar_7 - location
        loc_bar_8 - location
        loc_bar_9 - location
        loc_bar_10 - location
        loc_bar_11 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType ArmChair_bar_2 ArmChairType)
        (receptacleAtLocation ArmChair_bar_2 loc_bar_1)
        (receptacleType ArmChair_bar_1 ArmChairType)
        (receptacleAtLocation ArmChair_bar_1 loc_bar_2)
        (receptacleType CoffeeTable_bar_1 CoffeeTableType)
        (receptacleAtLocation CoffeeTable_bar_1 loc_bar_3)
        (receptacleType Drawer_bar_2 DrawerType)
        (receptacleAtLocation Drawer_bar_2 loc_bar_4)
        (openable Drawer_bar_2)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_5)
        (openable Drawer_bar_1)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_6)
        (receptacleType Shelf_bar_1 ShelfType)
        (receptacleAtLocation Shelf_bar_1 loc_bar_7)
        (receptacleType SideTable_bar_2 SideTableType)
        (receptacleAtLocation SideTable_bar_2 loc_bar_8)
        (receptacleType SideTable_bar_1 SideTableType)
        (receptacleAtLocation SideTable_bar_1 loc_bar_9)
        (receptacleType Sofa_bar_1 SofaType)
        (receptacleAtLocation Sofa_bar_1 loc_bar_10)
        (receptacleType TVStand_bar_1 TVStandType)
        (receptacleAtLocation TVStand_bar_1 loc_bar_11)
        (objectType Pillow_bar_2 PillowType)
        (inReceptacle Pillow_bar_2 ArmChair_bar_2)
        (objectAtLocation Pillow_bar_2 loc_bar_1)
        (pickupable Pillow_bar_2)
        (objectType Pillow_bar_1 PillowType)
        (inReceptacle Pillow_bar_1 ArmChair_bar_1)
        (objectAtLocation Pillow_bar_1 loc_bar_2)
        (pickupable Pillow_bar_1)
        (objectType RemoteControl_bar_1 RemoteControlType)
        (inReceptacle RemoteControl_bar_1 Sofa_bar_1)
        (objectAtLocation RemoteControl_bar_1 loc_bar_10)
        (pickupable RemoteControl_bar_1)
        (objectType Newspaper_bar_1 NewspaperType)
        (inReceptacle Newspaper_bar_1 CoffeeTable_bar_1)
        (objectAtLocation Newspaper_bar_1 loc_bar_3)
        (pickupable Newspaper_bar_1)
        (objectType Laptop_bar_1 LaptopType)
        (inReceptacle Laptop_bar_1 SideTable_bar_1)
        (objectAtLocation Laptop_bar_1 loc_bar_9)
        (pickupable Laptop_bar_1)
        (objectType Box_bar_1 BoxType)
        (inReceptacle Box_bar_1 CoffeeTable_bar_1)
        (objectAtLocation Box_bar_1 loc_bar_3)
        (pickupable Box_bar_1)
        (objectType KeyChain_bar_1 KeyChainType)
        (inReceptacle KeyChain_bar_1 Drawer_bar_2)
        (objectAtLocation KeyChain_bar_1 loc_bar_4)
        (pickupable KeyChain_bar_1)
        (objectType CreditCard_bar_1 CreditCardType)
        (inReceptacle CreditCard_bar_1 SideTable_bar_2)
        (objectAtLocation CreditCard_bar_1 loc_bar_8)
        (pickupable CreditCard_bar_1)
        (objectType TissueBox_bar_1 TissueBoxType)
        (inReceptacle TissueBox_bar_1 TVStand_bar_1)
        (objectAtLocation TissueBox_bar_1 loc_bar_11)
        (pickupable TissueBox_bar_1)
        (objectType Statue_bar_1 StatueType)
        (inReceptacle Statue_bar_1 Shelf_bar_1)
        (objectAtLocation Statue_bar_1 loc_bar_7)
        (pickupable Statue_bar_1)
        (canContain ArmChairType BoxType)
        (canContain ArmChairType CreditCardType)
        (canContain ArmChairType KeyChainType)
        (canContain ArmChairType LaptopType)
        (canContain ArmChairType NewspaperType)
        (canContain ArmChairType PillowType)
        (canContain ArmChairType RemoteControlType)
        (canContain CoffeeTableType BoxType)
        (canContain CoffeeTableType CreditCardType)
        (canContain CoffeeTableType KeyChainType)
        (canContain CoffeeTableType LaptopType)
        (canContain CoffeeTableType NewspaperType)
        (canContain CoffeeTableType RemoteControlType)
        (canContain CoffeeTableType StatueType)
        (canContain CoffeeTableType TissueBoxType)
        (canContain DrawerType CreditCardType)
        (canContain DrawerType KeyChainType)
        (canContain DrawerType NewspaperType)
        (canContain DrawerType RemoteControlType)
        (canContain DrawerType TissueBoxType)
        (canContain GarbageCanType NewspaperType)
        (canContain GarbageCanType TissueBoxType)
        (canContain ShelfType BoxType)
        (canContain ShelfType CreditCardType)
        (canContain ShelfType KeyChainType)
        (canContain ShelfType NewspaperType)
        (canContain ShelfType RemoteControlType)
        (canContain ShelfType StatueType)
        (canContain ShelfType TissueBoxType)
        (canContain SideTableType BoxType)
        (canContain SideTableType CreditCardType)
        (canContain SideTableType KeyChainType)
        (canContain SideTableType LaptopType)
        (canContain SideTableType NewspaperType)
        (canContain SideTableType RemoteControlType)
        (canContain SideTableType StatueType)
        (canContain SideTableType TissueBoxType)
        (canContain SofaType BoxType)
        (canContain SofaType CreditCardType)
        (canContain SofaType KeyChainType)
        (canContain SofaType LaptopType)
        (canContain SofaType NewspaperType)
        (canContain SofaType PillowType)
        (canContain SofaType RemoteControlType)
        (canContain TVStandType TissueBoxType)
    )
    (:goal
        (and
            (exists (?r - receptacle ?o1 - object ?o2 - object)
                (and
                    (not (= ?o1 ?o2))
                    (objectType ?o1 PillowType)
                    (objectType ?o2 PillowType)
                    (receptacleType ?r SofaType)
                    (inReceptacle ?o1 ?r)
                    (inReceptacle ?o2 ?r)
                )
            )
        )
    )
)
